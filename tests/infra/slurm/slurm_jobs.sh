#!/usr/bin/env bash
# The job scripts under a real Slurm: a slurmctld and two slurmd (and munged) of this test's own,
# in a scratch folder, on ports of its own. The two slurmd run on this one host as two nodes
# (NodeHostname, Port), each with its own spool, TmpFS and task TMPDIR, so that srun -N 2 launches
# across them as it would across two machines. sbatch --wait of jobscripts/slurm_1node_8gpu.sbatch
# with the CPU backend, a sweep cut by Slurm's stop signal and finished by resubmission, then
# jobscripts/slurm_multinode_8gpu.sbatch over both nodes.
# Stops exactly the daemons it started, by pid, also when it fails; on failure their logs are
# kept in ./slurm-logs (CTest's working folder). Exit 77 (skipped) with the reason where Slurm
# is missing and cannot be installed (not root, or no apt-get).
# shellcheck source-path=SCRIPTDIR source=../../common/common.sh
source "$(dirname "$0")/../../common/common.sh"

need=()
for cmd in slurmctld slurmd sbatch srun scontrol munged; do
  command -v "$cmd" > /dev/null 2>&1 || need+=("$cmd")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
    echo "installing slurm-wlm and munge (missing: ${need[*]})"
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      slurm-wlm munge; } > "$scratch/apt.log" 2>&1; then
      tail -n 20 "$scratch/apt.log" >&2
      fail "apt-get could not install slurm-wlm and munge"
    fi
  else
    echo "SKIPPED: ${need[*]} not found, and installing slurm-wlm and munge needs root and apt-get"
    exit 77
  fi
fi
if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: the test's own slurmctld and slurmd run as root (SlurmUser=root)"
  exit 77
fi

logs="$PWD/slurm-logs"
dir="$scratch/slurm"
nodes=(fobnode1 fobnode2)
mkdir -p "$dir/state" "$dir/log" "$dir/run" "$dir/out"
for node in "${nodes[@]}"; do mkdir -p "$dir/spool/$node" "$dir/tmp/$node"; done
host=$(hostname -s)
port=$((20000 + $$ % 20000))
pids=()
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  done
  if [ "$rc" != 0 ]; then
    mkdir -p "$logs"
    cp -r "$dir/log" "$dir"/out/*.out "$logs"/ 2> /dev/null || true
    echo "daemon logs kept in $logs" >&2
  fi
  rm -rf "$scratch"
  exit "$rc"
}
trap cleanup EXIT

head -c 1024 /dev/urandom > "$dir/munge.key"
chmod 400 "$dir/munge.key"
# Two slurmd on one host share what a host has once: the PMIx plugin's client folder (under
# TmpFS, per node by %n) and Open MPI's shared-memory segments, named after the host and the
# job, so that ranks of "different nodes" would map each other's segments and crash in the
# vader BTL. The task prolog gives each node's tasks a TMPDIR and a vader backing folder of
# their own. A real cluster needs none of this; the job scripts are the same.
cat > "$dir/taskprolog.sh" << PROLOG
#!/bin/sh
echo "export TMPDIR=$dir/tmp/\$SLURMD_NODENAME"
echo "export OMPI_MCA_btl_vader_backing_directory=$dir/tmp/\$SLURMD_NODENAME"
PROLOG
chmod 755 "$dir/taskprolog.sh"
cat > "$dir/slurm.conf" << CONF
ClusterName=fobtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
TaskProlog=$dir/taskprolog.sh
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldPort=$port
ReturnToService=2
KillWait=10
MinJobAge=600
NodeName=${nodes[0]} NodeHostname=$host Port=$((port + 1)) CPUs=$(nproc) State=UNKNOWN
NodeName=${nodes[1]} NodeHostname=$host Port=$((port + 2)) CPUs=$(nproc) State=UNKNOWN
PartitionName=fobtest Nodes=${nodes[0]},${nodes[1]} Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf

# Each daemon in the foreground of a background shell job, so that its pid is the one to stop.
munged -F --socket="$dir/run/munge.sock" --key-file="$dir/munge.key" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/run/munge.seed" --force > "$dir/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$dir/run/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -f "$SLURM_CONF" > "$dir/log/slurmctld.out" 2>&1 &
pids+=($!)
for node in "${nodes[@]}"; do
  slurmd -D -N "$node" -f "$SLURM_CONF" > "$dir/log/slurmd.$node.out" 2>&1 &
  pids+=($!)
done
idle() { sinfo -h -N -o %T 2> /dev/null | grep -c '^idle' || true; }
for _ in $(seq 100); do
  [ "$(idle)" = 2 ] && break
  sleep 0.2
done
[ "$(idle)" = 2 ] || fail "the nodes did not come up: $(sinfo -N 2>&1)"
echo "ok: slurmctld and two slurmd (${nodes[*]}) up on $host:$port"

# state JOBID: the job's state as Slurm records it.
state() { scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
cd "$FOB_SOURCE_DIR"
submit() {  # submit OUTNAME CONFIG [sbatch options...]: prints the job id
  local name=$1 config=$2
  shift 2
  BACKEND=cpu NP=2 CONFIG=$config OUTDIR=$dir/out OUTNAME=$name FOBENCH=$FOBENCH \
    sbatch --parsable --nodes=1 -n 2 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0 \
    --output="$dir/out/$name-%j.out" "$@" jobscripts/slurm_1node_8gpu.sbatch
}

# 1. The one-node script, as a user submits it, with the CPU backend.
job=$(submit smoke "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" --wait) ||
  fail "sbatch --wait: job failed: $(cat "$dir"/out/smoke-*.out)"
[ "$(state "$job")" = COMPLETED ] || fail "job $job is $(state "$job")"
[ -f "$dir/out/smoke.h5" ] || fail "no results file"
[ -s "$dir/out/smoke.md" ] || fail "no report"
grep -q "srun MPI plugin: pmix" "$dir"/out/smoke-*.out || fail "srun's MPI plugin is not pmix"
"$FOBENCH" report "$dir/out/smoke.h5" --format json > "$dir/smoke.json"
"$FOB_PYTHON" - "$dir/smoke.json" "$host" << 'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
system = doc["meta"]
assert system["world_size"] == 2, system["world_size"]
assert system["hostnames"].split(",")[0].split(".")[0] == sys.argv[2], system["hostnames"]
assert "SLURM_MPI_TYPE=pmix" in system["env"], "srun's tasks did not run under PMIx"
assert all(c["verified"] for c in doc["tables"][0]["rows"]), "unverified cases"
local = [d.rsplit("(local rank ", 1)[1].rstrip(")") for d in system["devices"].split(",")]
assert local == ["0 of 2", "1 of 2"], system["devices"]
print(f"ok: {len(doc['tables'][0]['rows'])} cases verified, 2 ranks on {system['hostnames']}")
PY

# 2. A sweep stopped by Slurm's signal (what --signal=TERM@120 sends before the time limit),
# then resubmitted under the same OUTNAME: every case measured once, under one header.
cat > "$dir/sweep.yaml" << 'YAML'
workload: mlp
batch: [2, 4, 6, 8, 10, 12]
seq: 64
hidden: 64
ffn: 128
strategies: [baseline, flash]
iters: 40
warmup: 2
backend: cpu
link_gbps: 0.5
link_latency_us: 200
verify: true
YAML
job=$(submit sweep "$dir/sweep.yaml")
for _ in $(seq 600); do
  [ -f "$dir/out/sweep.h5.partial" ] && "$FOBENCH" report "$dir/out/sweep.h5.partial" \
    --format csv 2> /dev/null | grep -q ',flash,' && break
  sleep 0.1
done
scancel --signal=TERM "$job"
for _ in $(seq 300); do
  case "$(state "$job")" in PENDING | RUNNING | COMPLETING) sleep 0.2 ;; *) break ;; esac
done
echo "ok: job $job stopped by SIGTERM: $(state "$job")"
[ -f "$dir/out/sweep.h5.partial" ] || fail "no .partial after the stop"
[ ! -f "$dir/out/sweep.h5" ] || fail "the sweep finished before the signal: make it longer"
job=$(submit sweep "$dir/sweep.yaml" --wait) ||
  fail "resubmission failed: $(cat "$dir"/out/sweep-*.out)"
grep -q "continuing" "$dir/out/sweep-$job.out" || fail "the resubmission did not resume"
[ -f "$dir/out/sweep.h5" ] || fail "no complete file after the resubmission"
"$FOBENCH" report "$dir/out/sweep.h5" --format csv > "$dir/sweep.csv"
"$FOB_PYTHON" - "$dir/sweep.csv" << 'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
keys = [(r["batch"], r["strategy"]) for r in rows]
assert len(keys) == len(set(keys)), f"a case measured twice: {sorted(keys)}"
want = {(str(b), s) for b in (2, 4, 6, 8, 10, 12)
        for s in ("compute_only", "comm_only", "baseline", "flash")}
assert set(keys) == want, f"cases {sorted(set(keys))} != {sorted(want)}"
assert all(r["iters"] == "40" for r in rows), [r["iters"] for r in rows]
assert all(r["verified"] == "1" for r in rows)
print(f"ok: {len(rows)} cases, each once, after a stop and a resubmission")
PY

# 3. The multinode script across both nodes: 2 nodes x 2 ranks, the CPU backend (GPUS_PER_NODE
# is the script's ranks per node). Open MPI groups ranks by node as Slurm placed them, so each
# node's ranks are local ranks 0 and 1 of 2 (what picks a rank's GPU, and the CPU's core slots).
job=$(BACKEND=cpu GPUS_PER_NODE=2 CONFIG="$FOB_SOURCE_DIR/bench_configs/smoke.yaml" \
  OUTDIR="$dir/out" OUTNAME=multi FOBENCH="$FOBENCH" \
  sbatch --parsable --wait --nodes=2 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0 \
  --output="$dir/out/multi-%j.out" jobscripts/slurm_multinode_8gpu.sbatch) ||
  fail "multinode job failed: $(cat "$dir"/out/multi-*.out)"
[ "$(state "$job")" = COMPLETED ] || fail "job $job is $(state "$job")"
[ -f "$dir/out/multi.h5" ] || fail "no multinode results file"
[ -s "$dir/out/multi.md" ] || fail "no multinode report"
grep -q "srun MPI plugin: pmix" "$dir/out/multi-$job.out" || fail "srun's MPI plugin is not pmix"
"$FOBENCH" report "$dir/out/multi.h5" --format json > "$dir/multi.json"
"$FOB_PYTHON" - "$dir/multi.json" "${nodes[0]}" "${nodes[1]}" << 'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
system = doc["meta"]
assert system["world_size"] == 4, system["world_size"]
env = dict(line.split("=", 1) for line in system["env"].splitlines() if "=" in line)
nodelist = env.get("SLURM_JOB_NODELIST", "")
assert nodelist in (f"{sys.argv[2]},{sys.argv[3]}", "fobnode[1-2]"), nodelist
local = [d.rsplit("(local rank ", 1)[1].rstrip(")") for d in system["devices"].split(",")]
assert local == ["0 of 2", "1 of 2", "0 of 2", "1 of 2"], system["devices"]
assert all(c["verified"] for c in doc["tables"][0]["rows"]), "unverified cases"
assert all(c["world"] == 4 for c in doc["tables"][0]["rows"])
print(f"ok: multinode script, {len(doc['tables'][0]['rows'])} cases verified, 4 ranks on nodes {nodelist}")
PY

# 4. The copy engines' transport across the two nodes, on the cuda model where this build has it:
# CUDA IPC maps GPUs of one node, so --transport ce is refused (exit 2, no file), naming the rule
# and which ranks are where (MPI_COMM_TYPE_SHARED groups ranks as Slurm placed them).
if [[ -z ${FOB_MODEL_MODULE:-} ]]; then
  echo "ok: step 4 not run: this build has no cuda model module"
  exit 0
fi
rc=0
FOB_CUDA_MODULE=$FOB_MODEL_MODULE FOB_MODEL_FATAL=1 timeout 300 srun --nodes=2 --ntasks=2 \
  --ntasks-per-node=1 --gpus-per-node=0 "$FOBENCH" run -c "$FOB_SOURCE_DIR/bench_configs/smoke.yaml" \
  --backend cuda --transport ce -o "$dir/out/ce.h5" >"$dir/ce.log" 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "transport ce across nodes: exit $rc, not 2: $(cat "$dir/ce.log")"
grep -q "transport: 'ce' maps peers' GPU memory with CUDA IPC, which reaches the GPUs of one node only, and the ranks run on 2 nodes (ranks 0 and 1)" \
  "$dir/ce.log" || fail "the refusal does not name the rule and the ranks: $(cat "$dir/ce.log")"
[[ ! -e $dir/out/ce.h5 && ! -e $dir/out/ce.h5.partial ]] || fail "a refused run wrote a file"
echo "ok: transport ce across ${nodes[*]} refused: $(grep -o "the ranks run on [^;]*" "$dir/ce.log" | sed -n 1p)"
