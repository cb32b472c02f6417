#!/bin/sh
# Compiles the test double of NIXL's C ABI (nixl_capi_double.c) into OUT/libnixl_capi_double.so, and its
# stub-build variant into OUT/libnixl_capi_stub_double.so, for this module's tests. Needs gcc.
set -eu
src="$(dirname "$0")/nixl_capi_double.c"
out="$1"
if ! command -v gcc >/dev/null 2>&1; then
  echo "mx-transport-nixl: the tests compile a C test double of NIXL's C ABI with gcc, and gcc is not installed" \
       "(apt-get install gcc)" >&2
  exit 1
fi
mkdir -p "$out"
flags="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -shared -fPIC"
gcc $flags -o "$out/libnixl_capi_double.so" "$src" -lpthread
gcc $flags -DNIXL_DOUBLE_STUB -o "$out/libnixl_capi_stub_double.so" "$src" -lpthread
