// The table formats every command's --format offers, in the order --help lists them. A new
// format is a file src/report/table_<name>.cpp defining its TableFormatDef (table.h), plus its
// line here (docs/EXTENDING.md).
#include <vector>

#include "fob/table.h"

#define FOB_TABLE_FORMATS(X) \
  X(kMarkdownFormat)         \
  X(kCsvFormat)              \
  X(kJsonFormat)             \
  X(kLatexFormat)

namespace fob {

#define FOB_DECLARE_FORMAT(def) extern const TableFormatDef def;
FOB_TABLE_FORMATS(FOB_DECLARE_FORMAT)
#undef FOB_DECLARE_FORMAT

const std::vector<TableFormat>& all_table_formats() {
#define FOB_LIST_FORMAT(def) &def,
  static const std::vector<TableFormat> formats = {FOB_TABLE_FORMATS(FOB_LIST_FORMAT)};
#undef FOB_LIST_FORMAT
  return formats;
}

}  // namespace fob
