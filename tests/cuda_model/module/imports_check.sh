#!/usr/bin/env bash
# Every CUDA-stack symbol the cuda module's model build imports, and every one it looks up at
# run time with dlsym (CUPTI's, the driver's and NVML's), is exported by one of the model's libraries;
# and every model library says it is the model's (fobmodel_identity).
#   imports_check.sh MODULE LIBDIR
set -euo pipefail
module=$1
libdir=$2
src=${FOB_SOURCE_DIR:?}/src/backends/cuda
fail=0

exports_of() {  # the dynamic symbols a library defines, without versions
  nm -D --defined-only "$1" | awk '{print $3}' | sed 's/@.*//' | sort -u
}
all_exports=$(for lib in "$libdir"/lib{cudart.so.13,cublas.so.13,nccl.so.2,cupti.so.13,cuda.so.1,nvidia-ml.so.1}; do
  [[ -f $lib ]] || { echo "missing model library $lib" >&2; exit 1; }
  exports_of "$lib"
done | sort -u)

for lib in "$libdir"/lib{cudart.so.13,cublas.so.13,nccl.so.2,cupti.so.13,cuda.so.1,nvidia-ml.so.1}; do
  grep -qx fobmodel_identity <<<"$(exports_of "$lib")" || { echo "$lib does not export fobmodel_identity"; fail=1; }
done

# Linked: the module's undefined CUDA, cuBLAS and NCCL symbols.
linked=$(nm -D --undefined-only "$module" | awk '{print $2}' | sed 's/@.*//' |
  grep -E '^(cuda|cublas|nccl|cupti|cu[A-Z])' | sort -u)
# Looked up by name: CUPTI (cupti_timer.cpp), the driver (module.cpp, launch_gate.cpp) and NVML
# (gpu_monitor.cpp).
looked_up=$(grep -ohE 'dlsym\([a-z_]+, "[A-Za-z0-9_]+"\)|find\(lib, "[A-Za-z0-9_]+"|bind\(lib, "[A-Za-z0-9_]+"' \
  "$src"/cupti_timer.cpp "$src"/module.cpp "$src"/launch_gate.cpp "$src"/gpu_monitor.cpp |
  grep -oE '"[A-Za-z0-9_]+"' | tr -d '"' |
  grep -v '^fobmodel_' | sort -u)
[[ -n $linked && -n $looked_up ]] || { echo "found no imports to check (linked: ${linked:-none})"; exit 1; }
for s in $linked $looked_up; do
  grep -qx "$s" <<<"$all_exports" || { echo "the module uses $s, which no model library exports"; fail=1; }
done
[[ $fail == 0 ]] && echo "every one of $(wc -w <<<"$linked $looked_up") symbols the module uses is the model's"
exit $fail
