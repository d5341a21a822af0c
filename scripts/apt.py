"""Install a missing command's Debian package: ``python -m scripts.apt COMMAND PACKAGE``.

``make test`` uses it for ``redis-server`` (the Redis tests start their own), ``make bench`` for wrk.
Exits 1, with one line saying so, when the command is still missing (not root, no apt-get, no package).
"""
import os
import shutil
import subprocess
import sys


def ensure(command, package):
    """Return the path of ``command``, installing ``package`` with apt-get when it is missing.

    Returns ``None`` when it cannot be had: apt-get is missing, we are not root, or the install failed.
    """
    found = shutil.which(command)
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    print(f"{command} is missing: apt-get install -y {package}", file=sys.stderr, flush=True)
    apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", package]
    # A fresh machine's package lists may be empty or stale: fetched once, only when the install fails.
    if subprocess.run(install, env=apt, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=apt, stdout=subprocess.DEVNULL)
        subprocess.run(install, env=apt, stdout=subprocess.DEVNULL)
    return shutil.which(command)


def main(argv):
    command, package = argv[1:3]
    if ensure(command, package) is None:
        print(f"{command} is missing and could not be installed (apt-get install {package}, as root)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
