#!/usr/bin/env bash
# Every citation of the design resolves: "DESIGN.md section N" in the sources names a section
# docs/DESIGN.md has ("## N. ..."), and every link to a heading of docs/DESIGN.md or
# docs/measurements.md names a heading there (GitHub's anchors: lower case, punctuation dropped,
# spaces to hyphens).
set -euo pipefail
root=${FOB_SOURCE_DIR:?FOB_SOURCE_DIR must name the source tree}
cd "$root"
status=0
anchors() {  # anchors FILE: the anchor of every heading
  sed -n 's/^#\{1,6\} //p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
sections=$(sed -n 's/^## \([0-9]\+\)\. .*/\1/p' docs/DESIGN.md)
while IFS=: read -r file line number; do
  if ! grep -qx "$number" <<<"$sections"; then
    echo "FAIL: $file:$line cites DESIGN.md section $number, which does not exist" >&2
    status=1
  fi
done < <(grep -rnoE "DESIGN\.md section [0-9]+" src include tests bench scripts jobscripts README.md \
  docs | sed -E 's/:DESIGN\.md section /:/')
for doc in DESIGN measurements; do
  known=$(anchors "docs/$doc.md")
  while IFS=: read -r file line anchor; do
    if ! grep -qx -- "$anchor" <<<"$known"; then
      echo "FAIL: $file:$line links $doc.md#$anchor, which is no heading of docs/$doc.md" >&2
      status=1
    fi
  done < <(grep -rnoE "$doc\.md#[a-z0-9_-]+" src include tests bench scripts README.md docs |
    sed -E "s/:$doc\.md#/:/")
done
[[ $status == 0 ]] && echo "ok: every citation of docs/DESIGN.md and docs/measurements.md resolves"
exit "$status"
