"""``--sandbox-user``: isolation by a separate unprivileged user, for hosts without user
namespaces (Gradescope's containers). With no namespaces, file permissions are what keep the
references, the other students' files and OUT from a submission: the run refuses to start
unless the kernel's own checks, made as that user, say they do."""

from __future__ import annotations

import os
import shutil
import subprocess

from attnkit.student_process.zygote import SHARED_SCRATCH

from .layout import (
    HIDDEN_PACKAGES,
    PUBLIC_PACKAGES,
    SandboxUnavailable,
    package_dir,
    python_paths,
    site_dirs,
)


def setpriv_prefix(user: str) -> list[str]:
    """setpriv's prefix that runs a command as ``user`` with no privileges left."""
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise SandboxUnavailable(
            f"--sandbox-user {user}: there is no such user.",
            f"Create it first, e.g. `sudo useradd --system --no-create-home {user}`.",
        ) from None
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "--sandbox-user needs the grader to run as root (to switch to that user)."
        )
    if shutil.which("setpriv") is None:
        raise SandboxUnavailable("--sandbox-user needs setpriv (util-linux), which is missing.")
    return [
        "setpriv",
        f"--reuid={entry.pw_uid}",
        f"--regid={entry.pw_gid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ]


# Shell conditions run as the sandbox user, one path at a time ($p).
CAN_REACH = (
    '{ [ -d "$p" ] && { [ -r "$p" ] || [ -x "$p" ]; }; } || { [ ! -d "$p" ] && [ -r "$p" ]; }'
)
CANNOT_USE = '! { [ -r "$p" ] && { [ ! -d "$p" ] || [ -x "$p" ]; }; }'


def paths_where(user: str, condition: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` for which the shell ``condition`` holds when tested as ``user``
    (with no supplementary groups, as the workers run): the kernel's own permission checks."""
    if not paths:
        return []
    script = f'for p; do if {condition}; then printf "%s\\0" "$p"; fi; done'
    found = subprocess.run(
        [*setpriv_prefix(user), "xargs", "-0", "-r", "sh", "-c", script, "sh"],
        input=b"\0".join(os.fsencode(p) for p in paths),
        capture_output=True,
        cwd="/",
        timeout=300,
        check=False,
    )
    return [os.fsdecode(p) for p in found.stdout.split(b"\0") if p]


def _tree(root: str) -> list[str]:
    """A folder and everything below it (links are not followed), or a file."""
    found = [root]
    for folder, folders, files in os.walk(root):
        found += [os.path.join(folder, name) for name in folders + files]
    return found


def check_sandbox_user(user: str, private: tuple[str | os.PathLike[str], ...] = ()) -> None:
    """Refuse --sandbox-user, naming the path and what to do, unless ``user`` can run the
    grader's Python and can read none of the kit's references and hidden tests, nor any of
    ``private`` (the submissions folder, OUT): with no namespaces, file permissions are
    what keeps them from a submission."""
    interpreter, search = python_paths()
    needed = [interpreter, *search[1:], *(package_dir(p) for p in PUBLIC_PACKAGES)]
    for path in paths_where(user, CANNOT_USE, needed)[:1]:
        raise SandboxUnavailable(
            f"--sandbox-user {user}: that user cannot read {path}, which the grader's Python "
            "needs to run submissions.",
            f"Install the kit into a Python that {user} can read (for instance a virtual "
            "environment made with /usr/bin/python3 outside /root), or make that path "
            f"readable for {user}.",
        )
    hidden = [package_dir(name) for name in HIDDEN_PACKAGES]
    for root in [*hidden, *(os.path.abspath(path) for path in private)]:
        readable = readable_below(user, root)
        if readable:
            what = "the kit's references and hidden tests" if root in hidden else "not public"
            raise SandboxUnavailable(
                f"--sandbox-user {user}: that user can read {readable[0]} ({what}).",
                f"Make it unreadable for other users, e.g. `chmod -R o-rwx {root}`, and keep "
                f"{user} out of its owner and group.",
            )


def readable_below(user: str, root: str) -> list[str]:
    """What ``user`` can read or list of ``root`` and everything below it."""
    return paths_where(user, CAN_REACH, _tree(os.path.abspath(root)))


def public_path(folder: str) -> str:
    """``folder``, filled with links to what a worker may import under --sandbox-user: the
    public packages and everything in site-packages but the hidden packages, editable
    finders and .pth files (which could map the hidden packages back in)."""
    os.chmod(folder, 0o755)
    entries = {name: package_dir(name) for name in PUBLIC_PACKAGES}
    for site in site_dirs():
        for name in os.listdir(site):
            hidden = name.startswith((*HIDDEN_PACKAGES, "__editable__", "_attnkit"))
            if not hidden and not name.endswith(".pth") and name not in entries:
                entries[name] = os.path.join(site, name)
    for name, target in entries.items():
        os.symlink(target, os.path.join(folder, name))
    return folder


def end_everything_of(user: str) -> None:
    """Kill every process of ``user``, and remove what it owns in SHARED_SCRATCH. The
    kernel's ``kill(-1)``, run as that user, reaches every process the user owns, whatever a
    submission did to leave its session."""
    prefix = setpriv_prefix(user)
    subprocess.run([*prefix, "kill", "-KILL", "-1"], capture_output=True, timeout=60, check=False)
    for folder in SHARED_SCRATCH:
        if os.path.isdir(folder):
            subprocess.run(
                [
                    "find",
                    folder,
                    "-xdev",
                    "-mindepth",
                    "1",
                    "-maxdepth",
                    "1",
                    "-user",
                    user,
                    "-exec",
                    "rm",
                    "-rf",
                    "--",
                    "{}",
                    "+",
                ],
                capture_output=True,
                timeout=300,
                check=False,
            )
