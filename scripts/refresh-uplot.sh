#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# refresh-uplot.sh — keeps the report page's charting library (uPlot, MIT)
# vendored in tool/report/vendor/uplot, so a build from a clean checkout
# always embeds a working `servprof report` with no download and no npm.
#
#   scripts/refresh-uplot.sh [VERSION]   fetch uPlot VERSION (default: the one
#                                        in VERSION) with `npm pack`, check the
#                                        tarball against the registry's integrity
#                                        hash (and against the one recorded here
#                                        when the version is unchanged), copy
#                                        the three files and rewrite VERSION and
#                                        SHA256SUMS
#   scripts/refresh-uplot.sh --check     no network: check the vendored files
#                                        against SHA256SUMS (a test runs this)
#
# Why vendored, not fetched at build time: the build must never depend on a
# hidden step or the network (a build without node_modules used to produce a
# `servprof report` that refused to run). The files are small (~50 KB) and
# change rarely; this script is how a maintainer moves the pin.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/tool/report/vendor/uplot"
FILES=(uPlot.iife.min.js uPlot.min.css LICENSE)

field() { sed -n "s/^$1: *//p" "$DIR/VERSION" 2>/dev/null | head -1 || true; }

if [ "${1:-}" = "--check" ]; then
  (cd "$DIR" && sha256sum --quiet -c SHA256SUMS) || {
    echo "refresh-uplot: the files in $DIR do not match SHA256SUMS (edited by hand?); run scripts/refresh-uplot.sh" >&2
    exit 1
  }
  echo "refresh-uplot: uPlot $(field version) in $DIR matches SHA256SUMS"
  exit 0
fi

command -v npm >/dev/null || { echo "refresh-uplot: needs npm (apt-get install npm); the build itself does not" >&2; exit 2; }
old_version=$(field version)
old_integrity=$(field integrity)
version=${1:-$old_version}
[ -n "$version" ] || { echo "refresh-uplot: no VERSION given and none recorded in $DIR/VERSION" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "uplot@$version" --silent >/dev/null)
tgz=$(ls "$tmp"/uplot-*.tgz)
integrity="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
registry=$(npm view "uplot@$version" dist.integrity)
if [ "$integrity" != "$registry" ]; then
  echo "refresh-uplot: the tarball's hash $integrity differs from the registry's $registry; nothing changed" >&2
  exit 1
fi
if [ "$version" = "$old_version" ] && [ -n "$old_integrity" ] && [ "$integrity" != "$old_integrity" ]; then
  echo "refresh-uplot: uPlot $version now hashes to $integrity, but $old_integrity was recorded; nothing changed" >&2
  exit 1
fi
tar -xzf "$tgz" -C "$tmp"
mkdir -p "$DIR"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$DIR/"
cat > "$DIR/VERSION" <<EOV
name: uplot
version: $version
license: MIT
source: https://registry.npmjs.org/uplot/-/uplot-$version.tgz
integrity: $integrity
refreshed-by: scripts/refresh-uplot.sh (do not edit these files by hand)
EOV
(cd "$DIR" && sha256sum "${FILES[@]}" > SHA256SUMS)
echo "refresh-uplot: uPlot $version vendored in $DIR"
