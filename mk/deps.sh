#!/usr/bin/env bash
# mk/deps.sh — make sure the Debian packages kvsim builds against are present.
#
# Installs what is missing with apt-get when running as root (or with
# password-less sudo); otherwise prints the exact install line and fails, so
# `make run` / `make test` never half-build on a machine that lacks a library.
set -euo pipefail

pkgs=(gcc make pkg-config libjansson-dev libgsl-dev libsqlite3-dev libxxhash-dev zlib1g-dev libcmocka-dev gnuplot-nox clang-format sqlite3 jq)
[ "${KVSIM_DEPS_EXTRA:-}" ] && read -r -a extra <<<"$KVSIM_DEPS_EXTRA" && pkgs+=("${extra[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then sudo=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"
else
  echo "kvsim: missing Debian packages: ${missing[*]}" >&2
  echo "kvsim: install them with:  sudo $line" >&2
  exit 1
fi
echo "kvsim: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo $line -qq
