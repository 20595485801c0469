#!/bin/sh
# Installs what the project needs on Debian 12 (as root) and builds it into ./build.
# Used by both README commands and by CI. Safe to run again: it reconfigures.
set -eu
cd "$(dirname "$0")/.."

# dpkg-dev: meson asks its dpkg-architecture for Debian's library directory
# (lib/x86_64-linux-gnu); without it, as on a fresh Debian, it installs into lib64, where
# neither pkg-config nor the dynamic loader looks.
PACKAGES="meson ninja-build pkg-config gcc g++ python3 python3-numpy dpkg-dev
          libunwind-dev uthash-dev libopenblas-dev libdw-dev libjansson-dev openssl"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ -d build ]; then
    meson setup --reconfigure build --werror
else
    meson setup build --werror
fi
meson compile -C build
