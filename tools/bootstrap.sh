#!/usr/bin/env bash
# bootstrap.sh — set up a Debian 12 machine for rig, build it, and run the main job or the tests.
#
#   bash tools/bootstrap.sh run    install what is missing, build, run the quickstart on the simulator
#   bash tools/bootstrap.sh test   install what is missing, build, run every test (plus an
#                                  ASan+UBSan build of the unit tests)
#
# Installs only the Debian packages that are missing (apt-get, through sudo when not root). The
# CUDA backend is built when a CUDA toolkit is found (/usr/local/cuda or nvcc on PATH); without
# one, rig builds and runs on the simulator alone. Idempotent: a second run rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
run | test) ;;
*)
    echo "usage: bash tools/bootstrap.sh run|test" >&2
    exit 2
    ;;
esac

packages=(build-essential cmake ninja-build pkg-config git ca-certificates
    libfyaml-dev libhdf5-dev libcmocka-dev libpcre2-dev libutf8proc-dev libjansson-dev libssl-dev
    libcurl4-openssl-dev
    libmicrohttpd-dev curl
    openmpi-bin libopenmpi-dev
    python3 python3-venv python3-numpy python3-h5py python3-matplotlib
    clang libclang-rt-14-dev)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j "$jobs"

if [ "$mode" = run ]; then
    ./build/rig --version
    exec ./build/rig run scenarios/quickstart.yaml
fi

# Python packages the differential tests compare against (HF tokenizers), in a venv of the build,
# made from Debian's interpreter, the one that sees the python3-numpy/-h5py/-matplotlib just
# installed (another python3 first on PATH, e.g. pyenv's, would not); remade when it cannot.
sys_python=python3
[ -x /usr/bin/python3 ] && sys_python=/usr/bin/python3
if [ ! -x build/venv/bin/python3 ] || ! build/venv/bin/python3 -c 'import numpy, h5py' 2>/dev/null
then
    rm -rf build/venv
    "$sys_python" -m venv --system-site-packages build/venv >/dev/null
fi
# pip trusts the system's certificate store (Debian's, with any local CA) rather than its own.
if [ -z "${PIP_CERT:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi
# pip's last line says why an install failed (a proxy's certificate, no network, ...).
pip_install() {
    local what=$1 log
    shift
    log=$(mktemp)
    if ! build/venv/bin/pip install -q "$@" >"$log" 2>&1; then
        echo "bootstrap: could not install $* ($what will skip): $(grep -v '^\s*$' "$log" |
            grep -i -m1 -E 'error|ssl|certificate|network' || tail -n 1 "$log")"
    fi
    rm -f "$log"
}
if ! build/venv/bin/python3 -c 'import tokenizers' 2>/dev/null; then
    pip_install "differential tests" tokenizers==0.23.3
fi
# The server tests (tests/serve/) use the official openai client and prometheus_client's parser.
if ! build/venv/bin/python3 -c 'import openai, prometheus_client, httpx' 2>/dev/null; then
    pip_install "server tests" openai prometheus_client httpx
fi
export PATH="$PWD/build/venv/bin:$PATH"

(cd build && ctest --output-on-failure -j "$jobs")

# The unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRIG_SANITIZE=ON -DRIG_CUDA=OFF \
    >/dev/null
ninja -C build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -L unit)

# The libFuzzer harnesses (tests/fuzz/): each over its committed corpus, then a short fuzz run.
CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIG_FUZZERS=ON \
    -DRIG_CUDA=OFF >/dev/null
ninja -C build-fuzz -j "$jobs" rig_fuzzers
(cd build-fuzz && ctest --output-on-failure -j "$jobs" -L fuzz)
echo "bootstrap: all tests passed"
