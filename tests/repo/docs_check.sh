#!/usr/bin/env bash
# The docs stay findable and readable (issue 45):
# - every docs page cited anywhere (`docs/<name>.md`, `docs/<name>.md#anchor`, and from inside
#   docs/ `<name>.md` and `<name>.md#anchor`) exists, and the anchor is one of its headings
#   (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens);
# - no citation in the old numbered style ("DESIGN.md section 5") remains;
# - every docs/*.md page is at most 350 lines and 4,500 words, so it reads at one sitting;
# - docs/DESIGN.md's first screen is its map: its first `## ` heading is "Map", within 15 lines.
# Prints what it checked; each problem is a FAIL line naming file:line, and the exit status is 1.
set -euo pipefail
root=${FOB_SOURCE_DIR:?FOB_SOURCE_DIR must name the source tree}
cd "$root"
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
anchors() {  # anchors FILE: the anchor of every heading outside code blocks
  awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ /, ""); print }' "$1" |
    tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
where=(src include tests bench bench_configs scripts jobscripts fuzz python results README.md docs)
cited=0
# FILE:LINE:docs/NAME.md[#ANCHOR] from everywhere, and FILE:LINE:NAME.md[#ANCHOR] from docs/
# (a relative link; ../README.md and the like are not docs pages). CSV files are data: a
# published row's source may be another project's docs.
while IFS=: read -r file line ref; do
  page=${ref%%#*}
  anchor=
  [[ $ref == *#* ]] && anchor=${ref#*#}
  page=docs/${page#docs/}
  cited=$((cited + 1))
  if [[ ! -f $page ]]; then
    fail "$file:$line cites $ref: there is no $page"
  elif [[ -n $anchor ]] && ! grep -qx -- "$anchor" <(anchors "$page"); then
    fail "$file:$line cites $ref: $page has no heading with the anchor #$anchor"
  fi
done < <(
  grep -rnoE --exclude-dir=corpus --exclude=docs_check.sh --exclude='*.csv' "docs/[A-Za-z0-9_-]+\.md(#[a-z0-9_-]+)?" "${where[@]}" \
    2> /dev/null || true
  grep -rnoE "(^|[^A-Za-z0-9_./-])[A-Za-z0-9_-]+\.md(#[a-z0-9_-]+)?" docs 2> /dev/null |
    sed -E 's/^([^:]*:[0-9]+:)[^A-Za-z0-9_-]?/\1/' | grep -vE ':(README)\.md' || true
)
echo "checked $cited citations of docs pages"
while IFS=: read -r file line text; do
  fail "$file:$line cites by section number ($text): cite docs/<page>.md#<heading>"
done < <(grep -rnoE --exclude=docs_check.sh "DESIGN\.md,? sections? [0-9]+" "${where[@]}" \
  2> /dev/null || true)
echo "checked that no citation names a section number"
pages=0
for page in docs/*.md; do
  pages=$((pages + 1))
  lines=$(wc -l < "$page")
  words=$(wc -w < "$page")
  ((lines <= 350)) || fail "$page:$lines has $lines lines, over 350: split it by topic"
  ((words <= 4500)) || fail "$page:1 has $words words, over 4,500: split it by topic"
done
echo "checked $pages docs pages for at most 350 lines and 4,500 words"
first=$(grep -nm1 '^## ' docs/DESIGN.md || true)
if [[ $first != *:"## Map" ]] || ((${first%%:*} > 15)); then
  fail "docs/DESIGN.md:${first%%:*} its first '## ' heading is '${first#*:}'; the map must come first, within 15 lines"
fi
echo "checked that docs/DESIGN.md opens with its map"
[[ $status == 0 ]] && echo "ok: every docs citation resolves, every page is short, DESIGN.md opens with its map"
exit "$status"
