#!/usr/bin/env bash
# The GPU check of mx-cuda (issue 17), in two halves.
#
#   mx-cuda/device-check.sh build   (here: JDK 25, Maven, nvcc)
#       Builds mx-cuda, mx-cli and mx-bench (PTX included, tests compiled, not run), jlinks a small Java runtime
#       (java.base, java.logging, java.management, java.xml for the JUnit reports, jdk.unsupported,
#       jdk.incubator.vector; --strip-debug --no-header-files --no-man-pages --compress=zip-9; libjvm.so's
#       symbol table stripped) and puts it with every jar the CUDA tests and
#       `mx bench cuda` need into ONE git-ignored folder, mx-cuda/target/device-check (checked < 64 MiB, size
#       printed). Trimmed to fit: jcuda-natives keeps only libJCudaDriver, bcprov only its crypto, util,
#       asn1 and math packages (BLAKE2b), and the Redis client stack (lettuce, netty, reactor) is left out.
#
#   bash mx-cuda/device-check.sh run   (the device machine: no Java, no Maven, no network needed)
#       Probes CUDA; runs the mx-cuda tests (JUnit console launcher) with -Dmx.test.requireNative=true, so a
#       skip is a failure there; runs `mx bench cuda --json` (device digest GB/s vs a device-to-device copy,
#       goal >= 0.8; casts vs copy, goal >= 0.5; cuda-ipc from a child JVM vs copy); then the device-resident
#       demo, `mx demo --device cuda --steps 2 --json` (4 trainer and 2 receiver JVMs, weights in GPU memory,
#       cuda-ipc), which must report "ok": true. Everything lands under $OUT (junit XML reports, test log,
#       bench JSON, demo JSON, summary.txt). Takes about 2-3 minutes on an H200 (at most 6.2 by the timeouts
#       below). Without a driver (e.g. run here) it reports the missing driver, runs the tests in skip mode
#       to show each skip's cause, checks that the device demo refuses in one line, and exits 3.
#
# From a session with the device tool (`status` says whether the task was lent a device):
#   1. here:      mx-cuda/device-check.sh build
#   2. device:    run(command="bash mx-cuda/device-check.sh run", carry=["mx-cuda/target/device-check"], timeout_s=420)
#   3. read $OUT: files_at/summary.txt, bench-cuda.json, junit/TEST-*.xml; record the numbers in
#      docs/performance/mx-cuda.md.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/mx-cuda/target/device-check"
LIMIT_MIB=64

build() {
  cd "$ROOT" || exit 1
  # shellcheck disable=SC1091
  . .mvn/find-jdk.sh
  mx_find_jdk || exit 1
  echo "device-check: building mx-cuda, mx-cli and mx-bench (tests compiled, not run) with $JAVA_HOME"
  ./mvnw -q -pl mx-cuda,mx-cli,mx-bench -am package -DskipTests || { echo "device-check: build failed" >&2; exit 1; }
  local standalone
  standalone=$(find "$HOME/.m2/repository/org/junit/platform/junit-platform-console-standalone" -name 'junit-platform-console-standalone-*.jar' 2>/dev/null | sort -V | tail -1)
  if [ -z "$standalone" ]; then
    ./mvnw -q dependency:get -Dartifact=org.junit.platform:junit-platform-console-standalone:6.1.3 >/dev/null || exit 1
    standalone=$(find "$HOME/.m2/repository/org/junit/platform/junit-platform-console-standalone" -name '*.jar' | sort -V | tail -1)
  fi
  rm -rf "$DIR"
  mkdir -p "$DIR/lib" "$DIR/test"
  "$JAVA_HOME/bin/jlink" --add-modules java.base,java.logging,java.management,java.xml,jdk.unsupported,jdk.incubator.vector \
    --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output "$DIR/jre" 2>&1 | grep -v 'incubator modules' || true
  [ -x "$DIR/jre/bin/java" ] || { echo "device-check: jlink failed" >&2; exit 1; }
  # libjvm.so ships its symbol table (5 MiB); the dynamic symbols the JVM needs stay.
  if command -v strip >/dev/null; then
    strip --strip-unneeded "$DIR/jre/lib/server/libjvm.so" && "$DIR/jre/bin/java" -version >/dev/null 2>&1 \
      || { echo "device-check: the runtime does not start after stripping libjvm.so" >&2; exit 1; }
  fi
  cp mx-cli/target/mx-cli*.jar mx-cli/target/lib/*.jar "$DIR/lib/"
  # `mx bench cuda` is one of mx-bench's Benchmark services; JMH (and what it pulls in) is not used by it.
  cp mx-bench/target/mx-bench.jar "$DIR/lib/"
  find mx-bench/target/lib -name '*.jar' ! -name 'jmh-*' ! -name 'jopt-simple-*' ! -name 'commons-math3-*' \
    -exec cp -n {} "$DIR/lib/" \;
  # Trim the two big jars to what runs: the driver binding, and BLAKE2b.
  local work; work=$(mktemp -d)
  for jar in "$DIR"/lib/jcuda-natives-*.jar; do
    (cd "$work" && rm -rf n && mkdir n && cd n && "$JAVA_HOME/bin/jar" xf "$jar" && find lib -type f ! -name 'libJCudaDriver-*' -delete \
      && rm -f "$jar" && "$JAVA_HOME/bin/jar" cf "$jar" .) || exit 1
  done
  for jar in "$DIR"/lib/bcprov-*.jar; do
    (cd "$work" && rm -rf b && mkdir b && cd b && "$JAVA_HOME/bin/jar" xf "$jar" \
      && find . -type f ! -path './org/bouncycastle/crypto/*' ! -path './org/bouncycastle/util/*' \
           ! -path './org/bouncycastle/asn1/*' ! -path './org/bouncycastle/math/*' -delete \
      && rm -f "$jar" && "$JAVA_HOME/bin/jar" cf "$jar" .) || exit 1
  done
  rm -rf "$work"
  # The Redis metadata store's client stack: neither the CUDA tests nor `mx bench cuda` load it.
  rm -f "$DIR"/lib/lettuce-core-*.jar "$DIR"/lib/netty-*.jar "$DIR"/lib/reactor-core-*.jar \
    "$DIR"/lib/reactive-streams-*.jar "$DIR"/lib/redis-authx-*.jar
  # The trimmed folder must still start: the probe also checks the CPU digest (BLAKE2b from the trimmed bcprov).
  "$DIR/jre/bin/java" --enable-native-access=ALL-UNNAMED -cp "$DIR/lib/*" dev.mx.cuda.CudaProbe >/dev/null
  [ $? -le 1 ] || { echo "device-check: the assembled folder does not run (CudaProbe failed)" >&2; exit 1; }
  # The tests: mx-cuda's test classes, the shared test jars, and the console launcher.
  cp -r mx-cuda/target/test-classes "$DIR/test/classes"
  cp mx-digest/target/mx-digest-*-tests.jar mx-transport-testsuite/target/mx-transport-testsuite-*.jar "$DIR/test/"
  cp "$standalone" "$DIR/test/junit-platform-console-standalone.jar"
  cp "$ROOT/mx-cuda/device-check.sh" "$DIR/"
  local bytes mib
  bytes=$(du -sb "$DIR" | cut -f1)
  mib=$(( (bytes + 1048575) / 1048576 ))
  echo "device-check: $DIR holds $bytes bytes ($mib MiB; runtime $(du -sm "$DIR/jre" | cut -f1) MiB, jars $(du -sm "$DIR/lib" | cut -f1) MiB, tests $(du -sm "$DIR/test" | cut -f1) MiB)"
  if [ "$mib" -ge "$LIMIT_MIB" ]; then
    echo "device-check: the folder must stay under $LIMIT_MIB MiB to be carried" >&2
    exit 1
  fi
}

run() {
  local out=${OUT:-$ROOT/mx-cuda/target/device-check-out}
  mkdir -p "$out"
  local java="$DIR/jre/bin/java"
  [ -x "$java" ] || { echo "device-check: $DIR/jre is missing; run 'mx-cuda/device-check.sh build' first and carry mx-cuda/target/device-check" >&2; exit 1; }
  local cp="$DIR/lib/*:$DIR/test/*:$DIR/test/classes"
  local jvm=(--enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -a)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  } > "$out/summary.txt" 2>&1
  # One line about CUDA from the availability holder itself (never throws).
  "$java" "${jvm[@]}" -cp "$cp" dev.mx.cuda.CudaProbe > "$out/probe.txt" 2>&1
  local probe=$?
  cat "$out/probe.txt" | tee -a "$out/summary.txt"
  local require=true
  if [ $probe -ne 0 ]; then
    echo "device-check: no usable CUDA here: the tests run in skip mode (each prints its cause), the bench says why" | tee -a "$out/summary.txt"
    require=false
  fi
  # requireNative=true makes every CUDA skip a failure on the device.
  timeout 150 "$java" "${jvm[@]}" -Dmx.test.requireNative=$require -Dmx.cuda.sourceDir="$ROOT/mx-cuda/src/main/cuda" \
    -Dmx.cuda.testSourceDir="$ROOT/mx-cuda/src/test/cuda" -Dmx.test.scratch="${TMPDIR:-/tmp}/mx-cuda-scratch" \
    -cp "$cp" org.junit.platform.console.ConsoleLauncher execute --scan-classpath "$DIR/test/classes" \
    --reports-dir "$out/junit" --details=tree --disable-banner > "$out/tests.txt" 2>&1
  local tests=$?
  tail -15 "$out/tests.txt" | tee -a "$out/summary.txt"
  echo "tests exit status: $tests (requireNative=$require)" | tee -a "$out/summary.txt"
  timeout 100 "$java" "${jvm[@]}" -XX:+UseParallelGC -cp "$DIR/lib/*" dev.mx.cli.Main bench cuda --repetitions 5 --json \
    > "$out/bench-cuda.json" 2> "$out/bench-cuda.err"
  local bench=$?
  cat "$out/bench-cuda.json" "$out/bench-cuda.err" | tee -a "$out/summary.txt"
  echo "bench exit status: $bench" | tee -a "$out/summary.txt"
  # The device-resident demo: publishers and receivers with their weights on the GPU, end to end.
  timeout 120 "$java" "${jvm[@]}" -cp "$DIR/lib/*" dev.mx.cli.Main demo --device cuda --steps 2 --json \
    > "$out/demo-device.json" 2> "$out/demo-device.err"
  local demo=$?
  if [ $demo -eq 0 ] && ! grep -q '"ok" : true' "$out/demo-device.json"; then
    demo=1
  fi
  grep -E '"(ok|error|device|transport)"|"gbps"|"verified_shards"' "$out/demo-device.json" | head -20 | tee -a "$out/summary.txt"
  tail -3 "$out/demo-device.err" | tee -a "$out/summary.txt"
  echo "device demo exit status: $demo" | tee -a "$out/summary.txt"
  if [ $probe -ne 0 ]; then
    exit 3
  fi
  [ $tests -eq 0 ] && [ $bench -eq 0 ] && [ $demo -eq 0 ]
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run   (see the header of this script)" >&2; exit 2 ;;
esac
