#!/usr/bin/env bash
# A ceiling on duplicate code in src: at most 12 blocks that lizard's duplicate extension
# (lizard -Eduplicate) finds. Prints the blocks when over; exits 77 without lizard (lizard.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ceiling=12
# shellcheck source=lizard.sh
source tests/repo/lizard.sh
# lizard exits non-zero when a function is over its default limits; the report is still whole.
report=$("${LIZARD[@]}" -Eduplicate src) || true
blocks=$(sed -n '/^Duplicates$/,$p' <<<"$report")
[[ -n $blocks ]] || { echo "FAIL: lizard printed no Duplicates section" >&2; exit 1; }
count=$(grep -c '^Duplicate block:' <<<"$blocks" || true)
if ((count > ceiling)); then
  printf 'FAIL: %d blocks of duplicate code in src, more than %d:\n%s\n' "$count" "$ceiling" \
    "$blocks" >&2
  exit 1
fi
echo "ok: $count blocks of duplicate code in src (ceiling $ceiling)"
