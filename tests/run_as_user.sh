#!/usr/bin/env bash
# Run the hostile-submission tests as an ordinary user, the way an instructor on a laptop or
# JupyterHub grades: a copy of the repository owned by that user, a fresh virtual environment
# from Debian's /usr/bin/python3 with the kit installed non-editable, no root anywhere.
#
# Usage (as root): tests/run_as_user.sh [USER] [pytest arguments...]
#   USER defaults to "tester"; the pytest arguments default to tests/test_grader_hostile.py.
# The copy lives in a fresh folder under /tmp (printed at the start) and is removed at the end
# unless KEEP=1. Exit status: pytest's.
set -euo pipefail

user="${1:-tester}"
shift || true
tests=("$@")
[ "${#tests[@]}" -gt 0 ] || tests=(tests/test_grader_hostile.py)

if [ "$(id -u)" -ne 0 ]; then
    echo "run_as_user.sh: run it as root (it switches to the user '$user' itself)." >&2
    exit 2
fi
if ! id "$user" >/dev/null 2>&1; then
    echo "run_as_user.sh: there is no user '$user'; create one with: useradd -m $user" >&2
    exit 2
fi

source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d /tmp/attnkit-as-user.XXXXXX)"
echo "run_as_user.sh: testing a copy in $work as $user"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# The repository as git sees it (tracked and untracked-but-not-ignored files), plus the
# lesson text, which is git-ignored.
mkdir "$work/repo"
git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
    (cd "$source_dir" && xargs -0 -r tar -cf - --ignore-failed-read 2>/dev/null) |
    tar -xf - -C "$work/repo"
# The installed (non-editable) kit looks for it through $ATTNKIT_VERDICT.
verdict_env=()
if [ -f "$source_dir/data/the-verdict.txt" ]; then
    cp "$source_dir/data/the-verdict.txt" "$work/repo/data/"
    verdict_env=("ATTNKIT_VERDICT=$work/repo/data/the-verdict.txt")
fi
chown -R "$user:$user" "$work"
chmod 700 "$work"

# Keep pip's settings (local wheels and indexes), CI's flag (tests that must not skip there)
# and a test Slurm cluster's configuration; drop everything else of root's environment.
pip_env=()
while IFS='=' read -r name value; do
    case "$name" in PIP_*|CI|ATTNKIT_TEST_SLURM_CONF) pip_env+=("$name=$value") ;; esac
done < <(env)

run_as() {
    setpriv --reuid "$user" --regid "$user" --init-groups \
        env -i HOME="$work" PATH=/usr/bin:/bin LANG=C.UTF-8 "${pip_env[@]}" "${verdict_env[@]}" "$@"
}

cd "$work/repo"
run_as /usr/bin/python3 -m venv .venv
run_as .venv/bin/python -m pip install -q ".[dev]"
run_as .venv/bin/python -c 'import os; assert os.geteuid() != 0, "still root"; print("running as uid", os.geteuid())'
run_as .venv/bin/python -m pytest -q -p no:cacheprovider "${tests[@]}"
