#!/usr/bin/env bash
# Publishing in one command, short of the upload: build kode's sdist and wheel, check them
# with twine, install the wheel in a fresh virtual environment and run the demo from it.
#
#   scripts/build_dist.sh [OUT_DIR]        # default: dist/
#
# PYTHON names the interpreter that builds (default: python3); it needs the `dist` extra
# (build, twine, hatchling): pip install -e '.[dist]'. The build is not isolated, so it runs
# offline with the hatchling installed there. The demo runs from an empty directory with the
# wheel's kode, not the checkout's; the wheel's dependencies come from the package index.
# Then `python -m twine upload OUT_DIR/*` would publish them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
OUT="$(realpath -m "${1:-dist}")"

rm -rf "$OUT"
echo "== build: sdist and wheel into $OUT"
"$PYTHON" -m build --no-isolation --sdist --wheel --outdir "$OUT" "$ROOT"

echo "== twine check"
"$PYTHON" -m twine check --strict "$OUT"/*

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
wheel=("$OUT"/kode_sdk-*-py3-none-any.whl)
echo "== install ${wheel[0]##*/} in a fresh virtual environment"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "${wheel[0]}"

echo "== the demo, with the installed wheel"
cp "$ROOT/examples/quickstart.py" "$work/quickstart.py"
cd "$work"
where="$("$work/venv/bin/python" -c 'import kode; print(kode.__file__)')"
case "$where" in
  "$work/venv/"*) ;;
  *) echo "== error: the demo would import kode from $where, not the wheel" >&2; exit 1 ;;
esac
"$work/venv/bin/python" quickstart.py
echo "== built, checked, installed and run: $OUT"
