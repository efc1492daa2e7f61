# Sourced by ops/test, ops/demo and ops/bench: make sure "$VENV" is a virtual environment of a
# supported Python (3.11+) with *this checkout* installed, at its version, with every
# dependency setup.cfg names (for the extras asked for). `python -c "import pipeline"` is no
# such check: from the checkout it imports the source tree whether or not anything is installed.
# Usage: VENV=.venv PYTHON=python3 source ops/venv.sh; ensure_installed '[test,dev]'

venv_python_supported() {  # exit 0 when "$1" is Python 3.11 or newer
  "$1" -I -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null
}

# Exit 0 when the venv's interpreter (isolated: -I, so the checkout is not on sys.path) sees
# sessiondex installed from this checkout at this checkout's version, and every requirement of
# setup.cfg (plus the extras in $1, e.g. "test,dev") installed; otherwise print why and exit 1.
installed_current() {
  "$VENV/bin/python" -I - "$PWD" "$1" <<'PY'
import configparser, json, re, sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

checkout, extras = Path(sys.argv[1]), [e for e in sys.argv[2].split(",") if e]
want = re.search(r'__version__ = "([^"]+)"', (checkout / "pipeline/__init__.py").read_text())
try:
    dist = metadata.distribution("sessiondex")
except metadata.PackageNotFoundError:
    sys.exit("sessiondex is not installed in this environment")
if want is None or dist.version != want.group(1):
    sys.exit(f"sessiondex {dist.version} is installed, the checkout is {want and want.group(1)}")
direct = json.loads(dist.read_text("direct_url.json") or "{}")
where = Path(unquote(urlparse(direct.get("url", "")).path))
if not direct.get("dir_info", {}).get("editable") or where.resolve() != checkout.resolve():
    sys.exit(f"sessiondex is installed from {where or 'a wheel'}, not from {checkout} (editable)")
cfg = configparser.ConfigParser()
cfg.read(checkout / "setup.cfg")
lines = cfg["options"]["install_requires"].split()
for extra in extras:
    lines += cfg["options.extras_require"][extra].split()
missing = []
for line in lines:
    name = re.match(r"[A-Za-z0-9._-]+", line)
    try:
        metadata.version(name.group(0)) if name else None
    except metadata.PackageNotFoundError:
        missing.append(line)
if missing:
    sys.exit("not installed: " + ", ".join(missing))
PY
}

ensure_installed() {  # $1: pip extras, e.g. '[test,dev]' or ''
  local extras="${1:-}" log why
  if [ -x "$VENV/bin/python" ] && ! venv_python_supported "$VENV/bin/python"; then
    echo "== $VENV was made by $("$VENV/bin/python" -V 2>&1); sessiondex needs Python 3.11+:" \
      "making it again" >&2
    rm -rf "$VENV"
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    if ! venv_python_supported "$PYTHON"; then
      echo "$PYTHON is $("$PYTHON" -V 2>&1 || echo missing); sessiondex needs Python 3.11+" \
        "(set PYTHON=/path/to/python3.11 or newer)" >&2
      exit 2
    fi
    "$PYTHON" -m venv "$VENV"
  fi
  if why=$(installed_current "$(echo "$extras" | tr -d '[] ')" 2>&1); then
    return 0
  fi
  echo "== installing sessiondex into $VENV (${why##*$'\n'})" >&2
  log=$(mktemp)  # pip and setuptools are chatty; show their output only when they fail
  if ! { "$VENV/bin/python" -m pip install --quiet --upgrade pip &&
         "$VENV/bin/python" -m pip install --quiet -e ".$extras"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  if ! why=$(installed_current "$(echo "$extras" | tr -d '[] ')" 2>&1); then
    echo "installed, but still: $why" >&2
    exit 1
  fi
}
