#!/usr/bin/env bash
# What someone plants at a results file's lock, NAME.h5.lock, in a folder others can write to:
# a symbolic link (also a dangling one), a hard link, a FIFO or a directory. Each is exit 2
# within seconds (a FIFO must not hold the run up), naming the lock and what it is; the file a
# link points at keeps its bytes, and no results file is written.
# shellcheck source=../common/common.sh
source "$(dirname "$0")/../common/common.sh"
smoke="$FOB_SOURCE_DIR/bench_configs/smoke.yaml"
plant_victim

# planted NAME KIND: `fobench run -o NAME.h5` (one rank, no mpirun) with KIND planted at
# NAME.h5.lock must be refused, naming it.
planted() {
  local name=$1 kind=$2 rc=0
  local out="$scratch/$name.h5"
  timeout 60 "$FOBENCH" run -c "$smoke" --strategies baseline -o "$out" \
    > "$scratch/$name.out" 2> "$scratch/$name.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$scratch/$name.err" >&2; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "'$out.lock' $kind; fobench's lock file must be a regular file" "$scratch/$name.err" ||
    { cat "$scratch/$name.err" >&2; fail "$name: the message does not say '$out.lock' $kind"; }
  grep -q -- "remove it" "$scratch/$name.err" || fail "$name: the message does not say what to do"
  victim_unchanged "$name"
  if [ -e "$out" ] || [ -e "$out.partial" ]; then fail "$name: a results file was written"; fi
  echo "ok: $name: $(grep -m1 error "$scratch/$name.err")"
}

ln -s "$victim" "$scratch/symlink.h5.lock"
planted symlink "is a symbolic link"
# A dangling link: creating the lock through it would make a file wherever it points.
ln -s "$scratch/made_through_a_link" "$scratch/dangling.h5.lock"
planted dangling "is a symbolic link"
[ ! -e "$scratch/made_through_a_link" ] || fail "dangling: a file was made through the link"
# A second name of the victim: writing the lock's note would truncate it.
ln "$victim" "$scratch/hardlink.h5.lock"
planted hardlink "has 2 hard links"
mkfifo "$scratch/fifo.h5.lock"
planted fifo "is a FIFO"
mkdir "$scratch/dir.h5.lock"
planted dir "is a directory"
for lock in symlink dangling hardlink fifo dir; do
  [ -e "$scratch/$lock.h5.lock" ] || [ -L "$scratch/$lock.h5.lock" ] ||
    fail "$lock: what was planted is gone; fobench removes only its own lock"
done

# The lock is fobench's own again once the planted thing is gone.
rm "$scratch/hardlink.h5.lock"
"$FOBENCH" run -c "$smoke" --strategies baseline -o "$scratch/hardlink.h5" > /dev/null ||
  fail "a run after the hard link was removed exited $?"
[ ! -e "$scratch/hardlink.h5.lock" ] || fail "the run left its lock behind"
echo "ok: nothing planted at a lock is written through"
