#!/usr/bin/env bash
# A real single-node Slurm cluster for the tests, from Debian's slurm-wlm and munge: munge
# with a key of its own, slurmctld and slurmd on free ports, every file under DIR. It needs
# root (slurmd starts each job as the user who submitted it). Nothing outside DIR changes,
# so two can run at once.
#
# Usage (as root):
#   tests/slurm_cluster.sh start DIR   starts it; prints the slurm.conf to export as SLURM_CONF
#   tests/slurm_cluster.sh stop DIR    stops it (DIR itself is left for its logs)
set -euo pipefail

action="${1:-}"
dir="${2:-}"
if [ -z "$dir" ] || { [ "$action" != start ] && [ "$action" != stop ]; }; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi
dir="$(realpath -m "$dir")"

stop() {
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
        if [ -s "$pidfile" ]; then
            kill "$(cat "$pidfile")" 2>/dev/null || true
        fi
    done
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
        for _ in $(seq 50); do
            [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null || break
            sleep 0.1
        done
    done
}

if [ "$action" = stop ]; then
    stop
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm_cluster.sh: run it as root (slurmd starts jobs as their users)." >&2
    exit 2
fi
for tool in slurmctld slurmd munged mungekey sinfo; do
    command -v "$tool" >/dev/null || { echo "slurm_cluster.sh: $tool is missing (apt-get install slurm-wlm munge)" >&2; exit 2; }
done

# Every user must reach the munge socket and read slurm.conf: sbatch, run by an ordinary
# user, authenticates through them.
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 755 "$dir" "$dir/log"
chown munge:munge "$dir/munge"
chmod 755 "$dir/munge"
runuser -u munge -- mungekey --create --keyfile="$dir/munge/munge.key"
runuser -u munge -- munged --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/munge/munged.log" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed"

read -r controller_port node_port < <(python3 - <<'PY'
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))
PY
)
host="$(hostname -s)"
cat > "$dir/slurm.conf" <<EOF
ClusterName=attnkit-test
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${controller_port}
SlurmdPort=${node_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=${dir}/munge/munge.sock
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool
SlurmctldPidFile=${dir}/slurmctld.pid
SlurmdPidFile=${dir}/slurmd.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=${host} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 )) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
chmod 644 "$dir/slurm.conf"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 300); do
    state="$(sinfo -h -o %t 2>/dev/null || true)"
    if [ "$state" = idle ]; then
        echo "$SLURM_CONF"
        exit 0
    fi
    sleep 0.2
done
echo "slurm_cluster.sh: the node did not become idle in 60 s (state: ${state:-none}); logs in $dir/log" >&2
stop
exit 1
