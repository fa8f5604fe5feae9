// Prints one plain closing line from jest's JUnit report (test-reports/junit.xml, written by `npm test`).
const fs = require('fs');
const report = 'test-reports/junit.xml';
if (fs.existsSync(report)) {
  const xml = fs.readFileSync(report, 'utf8');
  const count = (attr) => Number((new RegExp(`<testsuites[^>]* ${attr}="(\\d+)"`).exec(xml) || [])[1] || 0);
  const failed = count('failures') + count('errors');
  console.log(`jest: ${count('tests') - failed} passed, ${failed} failed`);
}
