#!/usr/bin/env bash
# The NCCL model exports exactly the NCCL API it models (what the cuda module imports, and
# ncclCommInitRank), under the real soname, so that the model build of the module loads it in
# place of NCCL.
#   check_symbols.sh LIBNCCL [LIBFOB_CUDA]
set -euo pipefail
lib=$1
module=${2:-}
fail=0
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [[ $soname != libnccl.so.2 ]]; then
  echo "soname of $lib is '$soname', not libnccl.so.2"
  fail=1
fi
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
expected="ncclAllGather ncclCommAbort ncclCommDeregister ncclCommDestroy ncclCommGetAsyncError
ncclCommInitRank ncclCommInitRankConfig ncclCommRegister ncclCommSplit ncclGetErrorString
ncclGetUniqueId ncclGetVersion ncclGroupEnd ncclGroupStart ncclMemAlloc ncclMemFree ncclRecv
ncclReduceScatter ncclSend fobmodel_identity"
for s in $expected; do
  grep -qx "$s" <<<"$exported" || { echo "missing export: $s"; fail=1; }
done
for s in $exported; do
  grep -qw "$s" <<<"$expected" || { echo "unexpected export: $s"; fail=1; }
done
if [[ -n $module ]]; then
  for s in $(nm -D --undefined-only "$module" | awk '{print $2}' | sed 's/@.*//' | grep '^nccl'); do
    grep -qx "$s" <<<"$exported" || { echo "the module imports $s, which the model lacks"; fail=1; }
  done
fi
[[ $fail == 0 ]] && echo "libnccl model exports: $(echo $exported)"
exit $fail
