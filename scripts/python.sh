# shellcheck shell=bash
# fob_python_with MODULE[,MODULE...]: prints the first Python 3 (the one on PATH, then the
# system's) that can import every module named, e.g. `fob_python_with h5py,pandas`. A python3 on
# PATH (pyenv, conda, a venv) may lack what the Debian packages gave /usr/bin/python3. Sourced by
# deps.sh (its checks) and demo.sh (the command it prints to read the results in pandas).
fob_python_with() {
  local py
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $1" >/dev/null 2>&1; then
      command -v "$py"
      return 0
    fi
  done
  return 1
}
