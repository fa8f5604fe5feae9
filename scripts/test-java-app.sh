#!/usr/bin/env bash
# The Java CDK app test (test/apps/java), as a Java team would consume the construct:
#   1. aws-cdk-lib (and the jsii packages it depends on) at the lowest version the peer range allows, in the local
#      Maven repository: Maven Central's when it serves that version; otherwise built by jsii-pacmak (the generator
#      the published jars come from) from the npm releases in node_modules — done once, then found in the repository;
#   2. the construct's jar from projen's standard Java packaging (`projen package:java` = jsii-pacmak), installed
#      into the local Maven repository;
#   3. `mvn test` on test/apps/java (JUnit 5; Surefire prints the closing line), writing each template for cfn-lint.
# The local repository is Maven's (~/.m2/repository) unless MAVEN_OPTS sets -Dmaven.repo.local.
# Needs a compiled .jsii and .jsii.tabl.json (`npx projen compile && npx projen post-compile`).
set -euo pipefail
cd "$(dirname "$0")/.."

test -f .jsii -a -f .jsii.tabl.json || { echo "no .jsii/.jsii.tabl.json: run \`npx projen compile && npx projen post-compile\`" >&2; exit 1; }
npx tsx scripts/readme-examples.ts --check

MVN=(mvn -B -q --no-transfer-progress -Dstyle.color=never)
repo=$(printf '%s' "${MAVEN_OPTS:-}" | sed -n 's/.*-Dmaven\.repo\.local=\([^ ]*\).*/\1/p')
[ -n "$repo" ] || repo=$HOME/.m2/repository
floor() { node -p "require('./package.json').$1.replace(/^[^0-9]*/, '')"; }
cdk_version=$(floor "peerDependencies['aws-cdk-lib']")
constructs_version=$(floor "peerDependencies.constructs")
nag_version=$(floor "devDependencies['cdk-nag']")
mkdir -p .tmp/bindings

# install_jar DIR: installs every jar+pom that jsii-pacmak wrote under DIR (a Maven repository layout).
install_jars() {
  local pom
  for pom in $(find "$1" -name '*.pom'); do
    "${MVN[@]}" install:install-file -Dfile="${pom%.pom}.jar" -DpomFile="$pom"
  done
}

if [ ! -f "$repo/software/amazon/awscdk/aws-cdk-lib/$cdk_version/aws-cdk-lib-$cdk_version.jar" ]; then
  if "${MVN[@]}" dependency:get -Dartifact="software.amazon.awscdk:aws-cdk-lib:$cdk_version" >.tmp/bindings/mvn-get.log 2>&1; then
    echo "aws-cdk-lib $cdk_version: from Maven Central"
  else
    installed=$(node -p "require('aws-cdk-lib/package.json').version")
    [ "$installed" = "$cdk_version" ] || { echo "aws-cdk-lib $cdk_version: not on Maven Central and node_modules holds $installed" >&2; exit 1; }
    echo "== aws-cdk-lib $cdk_version: not on Maven Central; building its jar from the npm release with jsii-pacmak (once)"
    start=$SECONDS
    out=.tmp/bindings/java-$cdk_version
    rm -rf "$out"
    # Its jsii dependencies first (Maven Central lacks them too); constructs and jsii-runtime come from Central.
    deps=$(node -p "Object.keys(require('aws-cdk-lib/package.json').dependencies).filter(d => d.startsWith('@aws-cdk/') && require(require.resolve(d + '/package.json', { paths: [require.resolve('aws-cdk-lib/package.json')] })).jsii).map(d => require.resolve(d + '/package.json', { paths: [require.resolve('aws-cdk-lib/package.json')] }).replace(/\/package.json$/, '')).join(' ')")
    npx jsii-pacmak --target java --outdir "$out/deps" $deps >"$out.deps.log" 2>&1 || { tail -30 "$out.deps.log"; exit 1; }
    install_jars "$out/deps/java"
    # aws-cdk-lib itself: generated sources, compiled without javadoc (13,000 classes; the javadoc alone takes minutes).
    npx jsii-pacmak --target java --code-only --outdir "$out/lib" node_modules/aws-cdk-lib >"$out.lib.log" 2>&1 || { tail -30 "$out.lib.log"; exit 1; }
    (cd "$out/lib/java" && MAVEN_OPTS="${MAVEN_OPTS:-} -Xmx4g" "${MVN[@]}" install -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true)
    rm -rf "$out"
    echo "aws-cdk-lib $cdk_version jar built and installed in $((SECONDS - start)) s"
  fi
fi

echo "== the construct's jar (projen package:java)"
rm -rf dist/java
# jsii-pacmak's Maven runs use a scratch local repository of their own; pointing them at Maven's lets them find
# aws-cdk-lib there (and reuse what earlier runs downloaded).
MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$repo" npx projen package:java >.tmp/package-java.log 2>&1 \
  || { tail -40 .tmp/package-java.log; exit 1; }
jar=$(find dist/java -name 'cdk-prompt-serving-*.jar' ! -name '*-sources.jar' ! -name '*-javadoc.jar')
"${MVN[@]}" install:install-file -Dfile="$jar" -DpomFile="${jar%.jar}.pom"
version=$(basename "$(dirname "$jar")")

echo "== mvn test (test/apps/java): aws-cdk-lib $cdk_version, constructs $constructs_version, cdk-nag $nag_version, construct $version"
export PROMPT_SERVING_TEMPLATE_DIR=$(realpath -m "${PROMPT_SERVING_TEMPLATE_DIR:-.tmp/templates}")
rm -f "$PROMPT_SERVING_TEMPLATE_DIR"/java-*.template.json
# NodejsFunction bundles the examples' reader with the project's esbuild (no Docker).
PATH="$PWD/node_modules/.bin:$PATH" mvn -B --no-transfer-progress -Dstyle.color=never -f test/apps/java/pom.xml test \
  -Dcdk.version="$cdk_version" -Dconstructs.version="$constructs_version" -Dcdknag.version="$nag_version" \
  -Dconstruct.version="$version" 2>&1 | grep -E '^\[(ERROR|WARNING)\]|Tests run:|BUILD|FAIL' | grep -v 'Tests run:.*in io.github' ; test "${PIPESTATUS[0]}" -eq 0
echo "test-java-app: done in ${SECONDS} s"
