# Sourced by ./mvnw, ./mx and .ci/run: make JAVA_HOME point at a JDK of release 25 or newer.
# Keeps a JAVA_HOME that is already new enough; otherwise searches the usual install folders.
mx_java_release() {
  # Prints the feature release of the JDK at $1 (e.g. 25), or nothing.
  [ -x "$1/bin/java" ] && [ -x "$1/bin/javac" ] || return 0
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null
}
mx_find_jdk() {
  local r
  if [ -n "${JAVA_HOME:-}" ]; then
    r=$(mx_java_release "$JAVA_HOME")
    if [ -n "$r" ] && [ "$r" -ge 25 ]; then return 0; fi
  fi
  # Callers may run with globbing off (mvnw uses set -f); the search needs it.
  case $- in *f*) set +f; local restore_noglob=1 ;; esac
  for c in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*25* /usr/lib/jvm/* /opt/java/* /opt/jdk* "$HOME"/.sdkman/candidates/java/* "$HOME"/.jdks/*; do
    [ -d "$c" ] || continue
    r=$(mx_java_release "$c")
    if [ -n "$r" ] && [ "$r" -ge 25 ]; then
      export JAVA_HOME="$c"
      [ -z "${restore_noglob:-}" ] || set -f
      return 0
    fi
  done
  [ -z "${restore_noglob:-}" ] || set -f
  echo "mx: no JDK 25 or newer found (JAVA_HOME='${JAVA_HOME:-}', searched /usr/lib/jvm and /opt)." >&2
  echo "mx: install one (e.g. Temurin 25) and set JAVA_HOME to it." >&2
  return 1
}
