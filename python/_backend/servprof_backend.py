"""A PEP 517 build backend for the servprof package, standard library only.

Why not setuptools: the machines this installs on have no package index,
and the Python found first may have setuptools without `wheel` (then
setuptools cannot build a wheel) or no setuptools at all. This backend
needs nothing (pyproject.toml: requires = []), so `pip install ./python`
works offline, with or without build isolation.

What it builds: a pure-Python wheel of servprof/*.py. With the config
setting servprof-lib=PATH (pip --config-settings servprof-lib=PATH) or the environment
variable SERVPROF_BUNDLE_LIB=PATH, the shared library is copied into the
package as servprof/libservprof.so.0 — where the binding looks first after
$SERVPROF_LIB — and the wheel is tagged for this platform. Editable installs
(pip install -e) add a .pth file pointing at the source folder.
"""

import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

NAME = "servprof"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PKG = os.path.join(HERE, NAME)
SONAME = "libservprof.so.0"


def _version():
    with open(os.path.join(PKG, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("servprof/__init__.py has no __version__ line")
    return m.group(1)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Python binding (ctypes) of libservprof, the LLM serving profiler\n"
            "Requires-Python: >=3.8\nLicense: see the servprof repository\n" % (NAME, _version()))


def _bundled_lib(config_settings):
    path = (config_settings or {}).get("servprof-lib") or os.environ.get("SERVPROF_BUNDLE_LIB")
    if not path:
        return None
    if not os.path.isfile(path):
        raise FileNotFoundError("servprof build: the library to bundle does not exist: %s "
                                "(from servprof-lib / SERVPROF_BUNDLE_LIB)" % path)
    return path


def _tag(bundled):
    if not bundled:
        return "py3-none-any"
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(wheel_directory, files, tag):
    """files: [(arcname, bytes)]. Writes the wheel, returns its file name."""
    dist_info = "%s-%s.dist-info" % (NAME, _version())
    files = list(files)
    files.append((dist_info + "/METADATA", _metadata().encode()))
    files.append((dist_info + "/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: servprof_backend\nRoot-Is-Purelib: %s\nTag: %s\n"
        % ("true" if tag.endswith("-any") else "false", tag)).encode()))
    files.append((dist_info + "/top_level.txt", (NAME + "\n").encode()))
    record = [_record_line(a, d) for a, d in files]
    record.append(dist_info + "/RECORD,,")
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = "%s-%s-%s.whl" % (NAME, _version(), tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arcname.endswith(".so.0") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _package_files():
    out = []
    for fn in sorted(os.listdir(PKG)):
        if fn.endswith(".py"):
            with open(os.path.join(PKG, fn), "rb") as f:
                out.append(("%s/%s" % (NAME, fn), f.read()))
    return out


# ---------------------------------------------------------------- PEP 517

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = _package_files()
    lib = _bundled_lib(config_settings)
    if lib:
        with open(lib, "rb") as f:
            files.append(("%s/%s" % (NAME, SONAME), f.read()))
    return _write_wheel(wheel_directory, files, _tag(lib))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = ("%s\n" % HERE).encode()
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % NAME, pth)], "py3-none-any")


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    members = ["pyproject.toml", "README.md", "_backend/servprof_backend.py"]
    members += ["%s/%s" % (NAME, fn) for fn in sorted(os.listdir(PKG)) if fn.endswith(".py")]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for m in members:
            path = os.path.join(HERE, m)
            if os.path.exists(path):
                t.add(path, arcname="%s/%s" % (base, m))
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        info.size = len(pkg_info)
        t.addfile(info, io.BytesIO(pkg_info))
    return name
