#include "server/store_sql.h"

#include <regex>

#include "kernels/family.h"

namespace blocktune {

std::string SqlQuoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string VersionCondition(VersionFilter versions, std::string_view t,
                             bool model) {
  if (versions == VersionFilter::kAll) return "1 = 1";
  const std::string p = std::string(t) + ".";
  std::string current;
  for (const KernelFamily* f : Families()) {
    const std::string v = std::to_string(f->version());
    current += std::string(current.empty() ? "" : " OR ") + "(" + p +
               "family = " + SqlQuoted(f->name()) + " AND " + p +
               "generator_version = " + v +
               (model ? " AND " + p + "data_version = " + v : "") + ")";
  }
  if (current.empty()) current = "1 = 0";
  return versions == VersionFilter::kCurrent ? "(" + current + ")"
                                             : "NOT (" + current + ")";
}

std::string PostgresDialect(std::string_view sqlite_sql) {
  // Order matters: the primary key first, before INTEGER becomes BIGINT.
  static const std::pair<std::regex, const char*> kRules[] = {
      {std::regex(R"(\bINTEGER PRIMARY KEY\b)"), "BIGSERIAL PRIMARY KEY"},
      {std::regex(R"(\bINTEGER\b)"), "BIGINT"},
      {std::regex(R"(\bREAL\b)"), "DOUBLE PRECISION"},
      {std::regex(R"(\bBLOB\b)"), "BYTEA"},
      {std::regex(R"(\bx'')"), "''::bytea"},
  };
  std::string sql(sqlite_sql);
  for (const auto& [pattern, replacement] : kRules) {
    sql = std::regex_replace(sql, pattern, replacement);
  }
  return sql;
}

}  // namespace blocktune
