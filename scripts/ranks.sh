# shellcheck shell=bash
# fob_default_ranks: how many ranks the demo and its benchmark run when NP is not given. One per
# physical core, 2 to 4: more ranks than cores take turns on them, and the overlap they then show
# is the scheduler's as much as the strategies'; fewer than 2 would communicate nothing.
fob_default_ranks() {
  local cores
  cores=$(lscpu -p=Core,Socket 2> /dev/null | grep -v '^#' | sort -u | wc -l || true)
  [[ "$cores" -ge 1 ]] 2> /dev/null || cores=$(nproc)
  echo $((cores < 2 ? 2 : cores > 4 ? 4 : cores))
}
