# shellcheck shell=sh
# Sourced by every launcher in the bundle's bin/ (POSIX sh: the bundle must start on machines
# with nothing but /bin/sh and coreutils). The launcher sets FOB_ROOT, the bundle's root, then
# calls fob_main NAME ARGS... (or fob_libs_command for bin/fob-libs).
#
# What it does, and why:
# - Every ELF file in libexec/ is started through the bundle's own loader,
#   lib/ld-linux-x86-64.so.2 --library-path ..., so the bundle's glibc and libraries are used
#   whatever the host has, and the host's programs (sh, nvidia-smi, python3) never see them:
#   the bundle's lib/ is never put on LD_LIBRARY_PATH.
# - cuBLAS, cuBLASLt, NCCL and the CUDA driver are the machine's own; fob_search finds them
#   (see fob_candidates for the order), reports what it found on stderr once per job and exports
#   the result, so ranks started by the bundle's mpirun neither search nor print again.
# - Open MPI and PMIx were built for /usr; the OPAL_* and PMIX_* variables point their
#   install directories (plugins, help files, configuration) into the bundle.

fob_nl='
'

fob_say() {
  printf '%s\n' "$*" >&2
}

# --- the libraries the bundle needs from the machine ------------------------------------------

# fob_needs [NAME|--required]: the sonames of lib/cuda-needs.txt (written when the bundle was
# made: every CUDA library a carried file needs, and the optional ones a module loads itself
# when it can), one a line, without repeats. With NAME, only those that libexec/NAME needs
# directly: without them it cannot even start. Without NAME, libcuda.so.1 (the driver) first,
# then all of them; --required leaves the optional ones out.
fob_needs() {
  _fob_list=''
  if [ $# -eq 0 ] || [ "$1" = --required ]; then _fob_list="libcuda.so.1$fob_nl"; fi
  if [ -f "$FOB_ROOT/lib/cuda-needs.txt" ]; then
    while read -r _fob_file _fob_soname; do
      case $_fob_file in '' | '#'*) continue ;; esac
      case ${1:-} in
        '') ;;
        --required) if [ "$_fob_file" = optional ]; then continue; fi ;;
        *) if [ "$_fob_file" != "libexec/$1" ]; then continue; fi ;;
      esac
      case "$fob_nl$_fob_list" in
        *"$fob_nl$_fob_soname$fob_nl"*) ;;
        *) _fob_list="$_fob_list$_fob_soname$fob_nl" ;;
      esac
    done <"$FOB_ROOT/lib/cuda-needs.txt"
  fi
  printf '%s' "$_fob_list"
}

# fob_is_optional SONAME: true when lib/cuda-needs.txt lists SONAME as optional.
fob_is_optional() {
  case "$fob_nl$(fob_needs --required)$fob_nl" in *"$fob_nl$1$fob_nl"*) return 1 ;; esac
  return 0
}

# fob_add_dir LABEL DIR: appends DIR (when it exists and is not listed yet) to the candidates.
fob_add_dir() {
  if [ -z "$2" ] || [ ! -d "$2" ]; then return 0; fi
  case "$fob_nl$fob_cand" in *"	$2$fob_nl"*) return 0 ;; esac
  fob_cand="$fob_cand$1	$2$fob_nl"
}

# fob_add_toolkit LABEL PREFIX: a CUDA toolkit's library directories.
fob_add_toolkit() {
  fob_add_dir "$1" "$2/lib64"
  fob_add_dir "$1" "$2/lib"
  fob_add_dir "$1" "$2/targets/x86_64-linux/lib"
  fob_add_dir "$1" "$2/extras/CUPTI/lib64"  # CUPTI, where a toolkit keeps it apart
}

# fob_site_dirs: the site-packages directories of the python3 on PATH, if there is one.
fob_site_dirs() {
  command -v python3 >/dev/null 2>&1 || return 0
  PYTHONDONTWRITEBYTECODE=1 python3 -c '
import site, sys
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
print("\n".join(dirs))' 2>/dev/null || true
}

# fob_glob_sites: site-packages directories that hold nvidia-* wheels in the usual places,
# for machines where the python3 that has them is not on PATH: the active venv or conda
# environment, venvs and conda environments up to three levels under /opt (/opt/torch/.venv,
# /opt/conda/envs/NAME), one level under /usr/local, two under the home directories (HOME,
# /root, /home/*) and the usual container work folders (/workspace, /app), the system's own
# (/usr: only its own, it has tens of thousands of directories below).
fob_glob_sites() {
  _fob_sys=${FOB_LIBS_SYSROOT:-}
  fob_glob_under "${VIRTUAL_ENV:-}" 0
  fob_glob_under "${CONDA_PREFIX:-}" 0
  fob_glob_under "$_fob_sys/opt" 3
  fob_glob_under "$_fob_sys/usr/local" 1
  fob_glob_under "${HOME:-}" 2
  fob_glob_under "$_fob_sys/root" 2
  for _fob_h in "$_fob_sys"/home/*; do fob_glob_under "$_fob_h" 2; done
  fob_glob_under "$_fob_sys/workspace" 2
  fob_glob_under "$_fob_sys/app" 2
  fob_glob_under "$_fob_sys/usr" 0
}

# fob_glob_under PREFIX DEPTH: fob_sites_in PREFIX and every directory up to DEPTH (at most 3)
# levels below it, hidden ones such as .venv too (at the last level only visible ones).
fob_glob_under() {
  if [ -z "$1" ] || [ ! -d "$1" ]; then return 0; fi
  fob_sites_in "$1"
  if [ "$2" -lt 1 ]; then return 0; fi
  for _fob_a in "$1"/* "$1"/.[!.]*; do
    if [ ! -d "$_fob_a" ]; then continue; fi
    fob_sites_in "$_fob_a"
    if [ "$2" -lt 2 ]; then continue; fi
    for _fob_b in "$_fob_a"/* "$_fob_a"/.[!.]*; do
      if [ ! -d "$_fob_b" ]; then continue; fi
      fob_sites_in "$_fob_b"
      if [ "$2" -lt 3 ]; then continue; fi
      for _fob_c in "$_fob_b"/*; do
        if [ -d "$_fob_c" ]; then fob_sites_in "$_fob_c"; fi
      done
    done
  done
  return 0
}

# fob_sites_in DIR: DIR/lib/python3*/{site,dist}-packages that have an nvidia/ folder.
fob_sites_in() {
  for _fob_d in "$1"/lib/python3*/*-packages; do
    if [ -d "$_fob_d/nvidia" ]; then printf '%s\n' "$_fob_d"; fi
  done
  return 0
}

# fob_add_wheels: the lib directories of every site-packages' nvidia-* wheels, CUDA 13 ones
# first: nvidia/cu13/lib (the CUDA 13 wheels share it), then NCCL where its wheel is the cu13
# one, then every other nvidia/*/lib (older wheels, NCCL of unknown CUDA version), so that a
# PyPI NCCL built for another CUDA major version (PyTorch's) comes after a CUDA 13 one.
fob_add_wheels() {
  _fob_sites=$(fob_site_dirs)
  _fob_all="$_fob_sites$fob_nl$(fob_glob_sites)"
  _fob_ifs=$IFS
  IFS=$fob_nl
  for _fob_pass in cu13 nccl-cu13 rest; do
    for _fob_s in $_fob_all; do
      _fob_label=site-packages
      case "$fob_nl$_fob_sites$fob_nl" in
        *"$fob_nl$_fob_s$fob_nl"*) _fob_label="python3 site-packages" ;;
      esac
      case $_fob_pass in
        cu13) fob_add_dir "$_fob_label" "$_fob_s/nvidia/cu13/lib" ;;
        nccl-cu13)
          for _fob_d in "$_fob_s"/nvidia_nccl_cu13-*.dist-info; do
            if [ -d "$_fob_d" ]; then fob_add_dir "$_fob_label" "$_fob_s/nvidia/nccl/lib"; fi
          done
          ;;
        *) for _fob_d in "$_fob_s"/nvidia/*/lib; do fob_add_dir "$_fob_label" "$_fob_d"; done ;;
      esac
    done
  done
  IFS=$_fob_ifs
}

# fob_candidates: sets fob_cand, the directories searched, in order, as "LABEL<tab>DIR" lines.
# What the user put on LD_LIBRARY_PATH wins, as it would for the loader; then the toolkit the
# user named, the machine's toolkits (newest first), pip's wheels, conda, the driver folder of
# NVIDIA's containers, the system. Toolkits come before wheels because a wheel's NCCL
# (libnccl.so.2 for every CUDA release) may belong to another CUDA major version, such as
# PyTorch's. FOB_LIBS_SYSROOT (the tests) prefixes the fixed system paths.
fob_candidates() {
  fob_cand=''
  _fob_sys=${FOB_LIBS_SYSROOT:-}
  _fob_ifs=$IFS
  set -f
  IFS=:
  for _fob_d in ${LD_LIBRARY_PATH:-}; do fob_add_dir LD_LIBRARY_PATH "$_fob_d"; done
  IFS=$_fob_ifs
  set +f
  if [ -n "${CUDA_HOME:-}" ]; then fob_add_toolkit CUDA_HOME "$CUDA_HOME"; fi
  if [ -n "${CUDA_PATH:-}" ]; then fob_add_toolkit CUDA_PATH "$CUDA_PATH"; fi
  fob_add_toolkit /usr/local/cuda "$_fob_sys/usr/local/cuda"
  _fob_list=''
  for _fob_d in "$_fob_sys"/usr/local/cuda-*; do _fob_list="$_fob_d$fob_nl$_fob_list"; done
  IFS=$fob_nl
  set -f
  for _fob_d in $_fob_list; do fob_add_toolkit /usr/local/cuda-X "$_fob_d"; done
  set +f
  IFS=$_fob_ifs
  fob_add_wheels
  if [ -n "${CONDA_PREFIX:-}" ]; then fob_add_dir CONDA_PREFIX "$CONDA_PREFIX/lib"; fi
  # NVIDIA's container runtime mounts the driver's libraries here, usually without putting the
  # folder on any search path; then the system's directories (the driver, NCCL from a package).
  for _fob_d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    fob_add_dir "driver folder" "$_fob_sys$_fob_d"
  done
  for _fob_d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /lib64 /usr/lib \
    /usr/lib/wsl/lib; do
    fob_add_dir "system directory" "$_fob_sys$_fob_d"
  done
}

# fob_elf32 FILE: true when FILE is a 32-bit ELF file (a container's /usr/local/nvidia/lib may
# hold the 32-bit driver), which the 64-bit loader would pass over.
fob_elf32() {
  case $(od -An -tx1 -N5 -- "$1" 2>/dev/null) in *'7f 45 4c 46 01'*) return 0 ;; esac
  return 1
}

# fob_load_cache: fob_cache, the output of ldconfig -p (the loader's ld.so.cache), read once.
# FOB_LIBS_LDCONFIG names another command (the tests); "none" or a fake system root skips it.
fob_load_cache() {
  if [ -n "${fob_cache_read:-}" ]; then return 0; fi
  fob_cache_read=1
  fob_cache=''
  _fob_ldc=${FOB_LIBS_LDCONFIG:-}
  if [ -z "$_fob_ldc" ] && [ -z "${FOB_LIBS_SYSROOT:-}" ]; then
    for _fob_c in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
      if command -v "$_fob_c" >/dev/null 2>&1; then
        _fob_ldc=$_fob_c
        break
      fi
    done
  fi
  if [ -n "$_fob_ldc" ] && [ "$_fob_ldc" != none ]; then
    fob_cache=$("$_fob_ldc" -p 2>/dev/null || true)
  fi
}

# fob_cache_lookup SONAME: the path ld.so.cache gives for SONAME (x86-64 entries only).
fob_cache_lookup() {
  printf '%s\n' "$fob_cache" | while IFS= read -r _fob_l; do
    _fob_l=${_fob_l#"${_fob_l%%[! 	]*}"}
    if [ "${_fob_l%% *}" != "$1" ]; then continue; fi
    case $_fob_l in *'=> '*) ;; *) continue ;; esac
    case ${_fob_l%%=>*} in
      *x86-64*)
        printf '%s\n' "${_fob_l##*=> }"
        break
        ;;
    esac
  done
}

# fob_search: looks for every library fob_needs names. Sets fob_found ("SONAME<tab>PATH<tab>
# LABEL" lines), fob_missing (sonames, space-separated), fob_missing_required (those of them
# that are not optional), fob_path (the directories of what was found, colon-separated, in
# search order, so the loader picks exactly what is reported).
fob_search() {
  fob_candidates
  fob_found=''
  fob_missing=''
  fob_missing_required=''
  fob_path=''
  _fob_req=$(fob_needs --required)
  _fob_needs=$(fob_needs)
  _fob_ifs=$IFS
  IFS=$fob_nl
  set -f
  for _fob_lib in $_fob_needs; do
    _fob_hit=''
    for _fob_entry in $fob_cand; do
      _fob_dir=${_fob_entry#*	}
      if [ -e "$_fob_dir/$_fob_lib" ] && ! fob_elf32 "$_fob_dir/$_fob_lib"; then
        _fob_hit="$_fob_dir/$_fob_lib	${_fob_entry%%	*}"
        break
      fi
    done
    if [ -z "$_fob_hit" ]; then
      fob_load_cache
      _fob_p=$(fob_cache_lookup "$_fob_lib")
      if [ -n "$_fob_p" ] && [ -e "$_fob_p" ]; then _fob_hit="$_fob_p	ld.so.cache"; fi
    fi
    if [ -z "$_fob_hit" ]; then
      fob_missing="${fob_missing:+$fob_missing }$_fob_lib"
      case "$fob_nl$_fob_req$fob_nl" in
        *"$fob_nl$_fob_lib$fob_nl"*)
          fob_missing_required="${fob_missing_required:+$fob_missing_required }$_fob_lib" ;;
      esac
      continue
    fi
    fob_found="$fob_found$_fob_lib	$_fob_hit$fob_nl"
  done
  # The directories in the order they were searched (those of ld.so.cache last): no directory
  # before the one a library was found in has it, so the loader takes the same file.
  for _fob_entry in $fob_cand "ld.so.cache	"; do
    for _fob_line in $fob_found; do
      _fob_p=${_fob_line#*	}
      _fob_label=${_fob_p#*	}
      _fob_p=${_fob_p%%	*}
      _fob_dir=${_fob_p%/*}
      if [ "$_fob_label" = ld.so.cache ] && [ "$_fob_entry" = "ld.so.cache	" ] ||
        [ "$_fob_dir" = "${_fob_entry#*	}" ]; then
        case ":$fob_path:" in
          *":$_fob_dir:"*) ;;
          *) fob_path="${fob_path:+$fob_path:}$_fob_dir" ;;
        esac
      fi
    done
  done
  set +f
  IFS=$_fob_ifs
}

# fob_optional_note SONAME: what an optional library is for (the programs run without it).
fob_optional_note() {
  case $1 in
    libcupti.so*) printf 'kernel-level task times; without it fobench times tasks with CUDA events' ;;
    *) printf 'the programs run without it' ;;
  esac
}

# fob_report [--brief]: what fob_search found and, when something is missing, where it
# looked (--brief: only a pointer to bin/fob-libs, which says that).
fob_report() {
  printf 'fobench bundle %s: libraries from this machine\n' "$FOB_ROOT"
  _fob_ifs=$IFS
  IFS=$fob_nl
  set -f
  for _fob_line in $fob_found; do
    _fob_lib=${_fob_line%%	*}
    _fob_rest=${_fob_line#*	}
    _fob_p=${_fob_rest%%	*}
    _fob_real=$(readlink -f -- "$_fob_p" 2>/dev/null || printf '%s' "$_fob_p")
    _fob_real=${_fob_real##*/}
    if [ "$_fob_real" = "$_fob_lib" ]; then _fob_real=''; else _fob_real=" (-> $_fob_real)"; fi
    printf '  %-18s %s%s [%s]\n' "$_fob_lib" "$_fob_p" "$_fob_real" "${_fob_rest#*	}"
  done
  set +f
  IFS=$_fob_ifs
  for _fob_lib in $fob_missing; do
    case " $fob_missing_required " in
      *" $_fob_lib "*) printf '  %-18s NOT FOUND\n' "$_fob_lib" ;;
      *) printf '  %-18s NOT FOUND (optional: %s)\n' "$_fob_lib" "$(fob_optional_note "$_fob_lib")" ;;
    esac
  done
  if [ -z "$fob_missing_required" ]; then return 0; fi
  if [ "${1:-}" = --brief ]; then
    printf '  (%s/bin/fob-libs shows where they were looked for)\n' "$FOB_ROOT"
  else
    fob_report_searched
  fi
}

fob_report_searched() {
  printf 'searched, in this order:\n'
  _fob_ifs=$IFS
  IFS=$fob_nl
  set -f
  for _fob_entry in $fob_cand; do
    printf '  %s: %s\n' "${_fob_entry%%	*}" "${_fob_entry#*	}"
  done
  set +f
  IFS=$_fob_ifs
  if [ -n "${fob_cache:-}" ]; then
    printf '  then ld.so.cache (ldconfig -p)\n'
  else
    printf '  (no ld.so.cache: no ldconfig to read it)\n'
  fi
  case " $fob_missing " in
    *' libcuda.so.1 '*)
      printf 'libcuda.so.1 comes with the NVIDIA driver: is one installed (nvidia-smi)? In a\n'
      printf 'container it is mounted in /usr/local/nvidia/lib64 or /usr/lib/x86_64-linux-gnu\n'
      ;;
  esac
  case " $fob_missing " in
    *' libcublas'* | *' libcudart'* | *' libnccl'*)
      printf 'for cuBLAS, NCCL or the CUDA runtime: set LD_LIBRARY_PATH or CUDA_HOME to the\n'
      printf 'directory that has them, or pip install the nvidia-* wheels for CUDA 13 (e.g.\n'
      printf 'nvidia-cublas, nvidia-nccl-cu13) for the python3 on PATH\n'
      ;;
  esac
}

# fob_resolve NAME: the libraries libexec/NAME will run with. Searches once per job: the
# result is exported (FOB_BUNDLE_*) for the processes this one starts, which neither search nor
# report again. Fails (exit 127, with where it looked) when NAME cannot start without a missing
# library, or FOB_REQUIRE_CUDA=1 and any is missing.
fob_resolve() {
  _fob_now=''
  if [ "${FOB_BUNDLE_SEARCHED:-}" != "$FOB_ROOT" ]; then
    fob_search
    _fob_now=1
    FOB_BUNDLE_SEARCHED=$FOB_ROOT
    FOB_BUNDLE_CUDA_PATH=$fob_path
    FOB_BUNDLE_CUDA_MISSING=$fob_missing
    export FOB_BUNDLE_SEARCHED FOB_BUNDLE_CUDA_PATH FOB_BUNDLE_CUDA_MISSING
  fi
  _fob_required=$(fob_needs "$1")
  # Optional libraries (CUPTI) are never required: the programs run without them.
  if [ "${FOB_REQUIRE_CUDA:-0}" = 1 ]; then _fob_required=$(fob_needs --required); fi
  _fob_fatal=''
  for _fob_lib in ${FOB_BUNDLE_CUDA_MISSING:-}; do
    case "$fob_nl$_fob_required$fob_nl" in
      *"$fob_nl$_fob_lib$fob_nl"*) _fob_fatal="${_fob_fatal:+$_fob_fatal, }$_fob_lib" ;;
    esac
  done
  if [ -n "$_fob_fatal" ]; then
    if [ "${FOB_REQUIRE_CUDA:-0}" = 1 ]; then
      fob_say "$1: cannot run: $_fob_fatal not found on this machine (FOB_REQUIRE_CUDA=1)"
    else
      fob_say "$1: cannot run: $_fob_fatal not found on this machine"
    fi
    if [ -z "$_fob_now" ]; then fob_search; fi
    fob_report >&2
    exit 127
  fi
  if [ -n "$_fob_now" ] && [ "${FOB_LIBS_QUIET:-0}" != 1 ]; then
    fob_report --brief >&2
    if [ -n "$fob_missing_required" ]; then
      fob_say "  (without them the cuda backend cannot run; the cpu backend works)"
    fi
  fi
}

# --- Open MPI and PMIx, relocated -------------------------------------------------------------

# fob_mpi_env NAME: the environment of libexec/NAME.
fob_mpi_env() {
  OPAL_PREFIX=$FOB_ROOT
  OPAL_EXEC_PREFIX=$FOB_ROOT
  OPAL_BINDIR=$FOB_ROOT/bin  # where mpirun finds orted (a launcher like this one)
  OPAL_SBINDIR=$FOB_ROOT/bin
  OPAL_LIBEXECDIR=$FOB_ROOT/libexec
  OPAL_LIBDIR=$FOB_ROOT/lib
  OPAL_PKGLIBDIR=$FOB_ROOT/lib/openmpi  # the MCA plugins
  OPAL_INCLUDEDIR=$FOB_ROOT/include
  OPAL_PKGINCLUDEDIR=$FOB_ROOT/include
  OPAL_DATAROOTDIR=$FOB_ROOT/share
  OPAL_DATADIR=$FOB_ROOT/share
  OPAL_PKGDATADIR=$FOB_ROOT/share/openmpi  # help files
  OPAL_SYSCONFDIR=$FOB_ROOT/etc/openmpi    # openmpi-mca-params.conf
  OPAL_SHAREDSTATEDIR=$FOB_ROOT/var
  OPAL_LOCALSTATEDIR=$FOB_ROOT/var
  OPAL_INFODIR=$FOB_ROOT/share/info
  OPAL_MANDIR=$FOB_ROOT/share/man
  export OPAL_PREFIX OPAL_EXEC_PREFIX OPAL_BINDIR OPAL_SBINDIR OPAL_LIBEXECDIR OPAL_LIBDIR \
    OPAL_PKGLIBDIR OPAL_INCLUDEDIR OPAL_PKGINCLUDEDIR OPAL_DATAROOTDIR OPAL_DATADIR \
    OPAL_PKGDATADIR OPAL_SYSCONFDIR OPAL_SHAREDSTATEDIR OPAL_LOCALSTATEDIR OPAL_INFODIR \
    OPAL_MANDIR
  PMIX_PREFIX=$FOB_ROOT
  PMIX_EXEC_PREFIX=$FOB_ROOT
  PMIX_LIBDIR=$FOB_ROOT/lib
  PMIX_PKGLIBDIR=$FOB_ROOT/lib/pmix
  PMIX_DATAROOTDIR=$FOB_ROOT/share
  PMIX_DATADIR=$FOB_ROOT/share
  PMIX_PKGDATADIR=$FOB_ROOT/share/pmix
  PMIX_SYSCONFDIR=$FOB_ROOT/etc/pmix
  PMIX_MCA_mca_base_component_path=$FOB_ROOT/lib/pmix
  export PMIX_PREFIX PMIX_EXEC_PREFIX PMIX_LIBDIR PMIX_PKGLIBDIR PMIX_DATAROOTDIR PMIX_DATADIR \
    PMIX_PKGDATADIR PMIX_SYSCONFDIR PMIX_MCA_mca_base_component_path
  # hwloc (Open MPI's topology library) would load the machine's own hwloc plugins, built
  # against another hwloc; the bundle's plugin directory is empty.
  HWLOC_PLUGINS_PATH=$FOB_ROOT/lib/hwloc
  export HWLOC_PLUGINS_PATH
  # Started without mpirun (fobench --version, fobench report): Open MPI 4 would fork an orted
  # for the singleton; it never needs one here.
  if [ "$1" = mpirun ] && [ -z "${OMPI_MCA_plm:-}${OMPI_MCA_plm_rsh_agent:-}" ] &&
    [ -z "${SLURM_JOB_ID:-}" ] && ! command -v ssh >/dev/null 2>&1 &&
    ! command -v rsh >/dev/null 2>&1; then
    # Without ssh or rsh, Open MPI 4's rsh launcher aborts mpirun even for ranks on this
    # machine instead of stepping aside; the isolated launcher starts local ranks only.
    OMPI_MCA_plm=isolated
    export OMPI_MCA_plm
  fi
  case $1 in mpirun | orted) return 0 ;; esac
  if [ -z "${OMPI_COMM_WORLD_SIZE:-}" ] && [ -z "${PMIX_RANK:-}" ] && [ -z "${PMI_RANK:-}" ]; then
    OMPI_MCA_ess_singleton_isolated=${OMPI_MCA_ess_singleton_isolated:-1}
    export OMPI_MCA_ess_singleton_isolated
  fi
}

# --- entry points ----------------------------------------------------------------------------

# fob_main NAME ARGS...: runs libexec/NAME with the bundle's loader and libraries.
fob_main() {
  _fob_name=$1
  shift
  if [ ! -f "$FOB_ROOT/libexec/$_fob_name" ]; then
    fob_say "fobench bundle: no libexec/$_fob_name in $FOB_ROOT"
    exit 127
  fi
  fob_resolve "$_fob_name"
  fob_mpi_env "$_fob_name"
  exec "$FOB_ROOT/lib/ld-linux-x86-64.so.2" \
    --library-path "$FOB_ROOT/lib${FOB_BUNDLE_CUDA_PATH:+:$FOB_BUNDLE_CUDA_PATH}" \
    --argv0 "$_fob_name" "$FOB_ROOT/libexec/$_fob_name" "$@"
}

# fob_libs_command [--path|--quiet]: bin/fob-libs. Searches afresh (ignoring what a parent
# exported) and prints the report on stdout; --path prints only the library directories.
# Exit 1 when a required library is missing (an optional one, CUPTI, is only reported).
fob_libs_command() {
  fob_search
  case "${1:-}" in
    --path) printf '%s\n' "$fob_path" ;;
    --quiet) ;;
    '') fob_report ;;
    *)
      fob_say "usage: fob-libs [--path|--quiet]"
      exit 2
      ;;
  esac
  [ -z "$fob_missing_required" ]
}
