"""``python -m scripts.bench`` (``make bench``): the bench in the project's virtualenv, from the repo root."""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

# Started with another interpreter (``python3 -m scripts.bench``, ``python3 scripts/bench``): re-run
# in the project's virtualenv, from the repo root, so ``app`` and ``scripts`` import and
# gunicorn/flask are the pinned ones.
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != VENV_PYTHON.parent.parent.resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), "-m", "scripts.bench", *sys.argv[1:]])
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.bench.main import main  # noqa: E402

sys.exit(main())
