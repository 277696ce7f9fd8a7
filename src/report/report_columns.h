// The columns of `fobench report --format csv|json`, one row per case, each with the Summary
// member it shows. The report's rows and the results file's /summary attribute `report_columns`
// are both made from this one list, so a reader of the file alone (python/fobench_pandas.py)
// gives the report's names, order and units without keeping a copy of them.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "fob/metrics.h"
#include "fob/table.h"

namespace fob {

struct ReportColumn {
  using Member = std::variant<std::string Summary::*, int64_t Summary::*, int32_t Summary::*,
                              double Summary::*>;
  Column column;      // the key (name and unit token), unit and type the report prints
  const char* field;  // the Summary member, which is also /summary's field of that name
  double scale = 1;   // the report's value is the field's times this (seconds to ms: 1e3)
  Member member;
};

const std::vector<ReportColumn>& report_columns();

// The column's cell of a case's row: the member times `scale`; a boolean from an int32 member
// that is negative (not checked) is absent.
Cell report_cell(const ReportColumn& column, const Summary& s);

}  // namespace fob
