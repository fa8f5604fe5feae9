/**
 * One home per figure: a measured figure (a size, a latency, a ratio) lives in docs/BENCHMARKS.md, a fault and what
 * held in docs/RELIABILITY.md; every other page links there instead of restating the number, so the two cannot
 * disagree. History (docs/maintainers/), the changelog and the decision records (docs/adr/) are records of their
 * time and may quote the figures of their time.
 *
 * What counts as a measured figure is deliberately narrow, so that documented settings and limits stay writable
 * ("a 10 requests/s quota", "4 KB items", "`l2TimeoutMs` 100 ms", "DynamoDB's 400 KB item"):
 * - a ratio written against a number (`0.78×`, `1.10–1.27×`);
 * - anything in µs, and a size with a decimal point (`48.0 KB`, `32.6 KB`);
 * - a percentile with a value (`p99 0.65 s`, `p50 1.8 µs`);
 * - an approximate size or time (`about 400 KB`, `~15 ms`, `≈ 2 KB`);
 * - a number in ms, s, KB or MB on a line that says it was measured.
 * Code blocks and inline code are skipped (they hold commands and settings). A deliberate exception goes in
 * ALLOWED with its reason.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..');

/** The homes of figures, and records of their time. */
const HOMES = [
  'docs/BENCHMARKS.md',
  'docs/RELIABILITY.md',
  'CHANGELOG.md',
];
const HOME_DIRS = ['docs/maintainers/', 'docs/adr/'];

/** Exceptions, each `file: substring of the line`, with the reason. */
const ALLOWED: Array<{ file: string; line: string; reason: string }> = [
];

const FIGURE_RULES: Array<{ name: string; pattern: RegExp }> = [
  { name: 'a ratio', pattern: /\d(?:[.,]\d+)?(?:\s?[–-]\s?\d+(?:\.\d+)?)?×/ },
  { name: 'a time in µs', pattern: /\d\s?µs\b/ },
  { name: 'a size with a decimal point', pattern: /\d\.\d+\s?(?:KB|MB|KiB|MiB)\b/ },
  { name: 'a percentile with a value', pattern: /\bp(?:50|90|95|99)\b[^.;|]{0,12}\d/ },
  { name: 'an approximate size or time', pattern: /(?:about|~|≈)\s?\d[\d,.]*\s?(?:KB|MB|ms|s)\b/ },
];
const MEASURED_LINE = /\bmeasured\b/i;
const UNIT_FIGURE = /\d[\d,.]*(?:\s?[–-]\s?\d[\d,.]*)?\s?(?:ms|s|KB|MB)\b/;

function markdownFiles(): string[] {
  const out = ['README.md', 'CONTRIBUTING.md', 'python/README.md'];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out.filter((f) => !HOMES.includes(f) && !HOME_DIRS.some((d) => f.startsWith(d)));
}

/** The prose of a page, line by line: fenced code blocks blanked, inline code and link targets removed. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    if (fenced || /^ {4}\S/.test(line)) return '';
    return line.replace(/`[^`]*`/g, '``').replace(/\]\([^)]*\)/g, ']()');
  });
}

export function figuresOutsideTheirHome(): string[] {
  const found: string[] = [];
  for (const file of markdownFiles()) {
    proseLines(fs.readFileSync(path.join(ROOT, file), 'utf8')).forEach((line, i) => {
      const rules = FIGURE_RULES.filter((r) => r.pattern.test(line)).map((r) => r.name);
      if (MEASURED_LINE.test(line) && UNIT_FIGURE.test(line)) rules.push('a figure on a line that says "measured"');
      if (rules.length === 0) return;
      if (ALLOWED.some((a) => a.file === file && line.includes(a.line))) return;
      found.push(`${file}:${i + 1}: ${rules.join(', ')}: ${line.trim().slice(0, 140)}`);
    });
  }
  return found;
}

test('no page but BENCHMARKS, RELIABILITY and the records restates a measured figure (link to it instead)', () => {
  // GIVEN every markdown page of the repository but the figures' homes
  // WHEN it is scanned for measured figures
  // THEN none is found: each figure has one home, the others link to it
  expect(figuresOutsideTheirHome()).toEqual([]);
});

test('the figure rules catch the restated figures they are meant for, and leave settings alone', () => {
  const hits = (line: string) =>
    FIGURE_RULES.some((r) => r.pattern.test(line)) || (MEASURED_LINE.test(line) && UNIT_FIGURE.test(line));
  // GIVEN restated figures of the kinds that once disagreed between pages
  for (const restated of [
    'The reader bundle is 48.0 KB minified',
    'a cached read costs 0.78× an awaited Map lookup',
    'node-redis in one file, about 400 KB',
    'measured at the defaults, 50 reader processes, p99 0.65 s',
    'a miss costs 50 µs of CPU',
    'every reader is on arm A within 3 s of the alarm (731–886 ms measured)',
  ]) expect({ restated, flagged: hits(restated) }).toEqual({ restated, flagged: true });
  // AND settings, limits and defaults that are documented values, not measurements
  for (const setting of [
    "a prompt's pointer must fit in DynamoDB's 400 KB item",
    'one eventually consistent GetItem (0.5 RRU up to 4 KB)',
    'the epoch poll, 500 ms by default',
    "Bedrock's 10 req/s quota",
    '`l2TimeoutMs` (100 ms)',
    'measured in [BENCHMARKS](docs/BENCHMARKS.md)',
  ]) expect({ setting, flagged: hits(setting) }).toEqual({ setting, flagged: false });
});

test('docs name reasons in words, not issue numbers', () => {
  // GIVEN the user-facing pages (the records excepted)
  // THEN none cites "issue N" as a reason
  const cited = markdownFiles().flatMap((file) =>
    proseLines(fs.readFileSync(path.join(ROOT, file), 'utf8'))
      .map((line, i) => (/\bissues? \d+/i.test(line) ? `${file}:${i + 1}: ${line.trim().slice(0, 120)}` : ''))
      .filter(Boolean),
  );
  expect(cited).toEqual([]);
});

test('the README stays a front page: at most 25 KB, the release path and the cache tier in its opening', () => {
  // GIVEN the README
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  // THEN it is short enough to read through, detail lives in docs/
  expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(25 * 1024);
  // AND its opening (before the first section) names the cache tier and the release path, and its list names every doc
  const opening = readme.slice(0, readme.indexOf('\n## '));
  expect(opening).toMatch(/cache tier/i);
  expect(opening).toMatch(/release path/i);
  for (const doc of fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'))) {
    expect({ doc, listed: opening.includes(`docs/${doc}`) }).toEqual({ doc, listed: true });
  }
  // AND the commands a newcomer runs first are there
  expect(readme).toContain('npm ci && npm run demo');
  expect(readme).toContain('npm ci && npm test');
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const explicit = line.match(/<a id="([^"]+)"/);
    if (explicit) out.add(explicit[1]);
    const heading = !fenced && line.match(/^#{1,6}\s+(.*)$/);
    if (!heading) continue;
    const base = heading[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

test('every link between the docs lands on a file and a heading that exist', () => {
  // GIVEN every markdown page, the figures' homes and records included
  const pages = [...markdownFiles(), ...HOMES, 'docs/maintainers/BENCHMARKS-HISTORY.md'];
  const broken: string[] = [];
  for (const page of pages) {
    const text = fs.readFileSync(path.join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    // WHEN each relative link to a markdown page is followed
    for (const [, target, anchor] of text.matchAll(/\]\(((?!https?:)[^)#\s]*\.md)?(?:#([^)\s]+))?\)/g)) {
      if (target === undefined && anchor === undefined) continue;
      const file = target ? path.join(path.dirname(page), target) : page;
      if (!fs.existsSync(path.join(ROOT, file))) {
        broken.push(`${page}: no file ${target}`);
        continue;
      }
      // THEN the file exists and so does the heading
      if (anchor && !anchors(fs.readFileSync(path.join(ROOT, file), 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${page}: no heading #${anchor} in ${file}`);
      }
    }
  }
  expect(broken).toEqual([]);
});
