// SQL shared by the SQLite and PostgreSQL stores.
#ifndef BLOCKTUNE_SERVER_STORE_SQL_H_
#define BLOCKTUNE_SERVER_STORE_SQL_H_

#include <string>
#include <string_view>

#include "server/tuning_store.h"

namespace blocktune {

// `text` as an SQL string literal.
std::string SqlQuoted(std::string_view text);

// A condition on the rows of table alias `t` for `versions`: the current
// versions are this build's registry's (Families()), written into the SQL.
// A model is current when its data is too (ModelRecord::IsCurrent).
std::string VersionCondition(VersionFilter versions, std::string_view t,
                             bool model = false);

// schema.cc's migrations are written for SQLite; the statements are
// portable and only column types differ. This rewrites them for
// PostgreSQL: INTEGER PRIMARY KEY -> BIGSERIAL PRIMARY KEY, INTEGER ->
// BIGINT (SQLite integers are 64-bit), REAL -> DOUBLE PRECISION, BLOB ->
// BYTEA, the blob literal x'' -> ''::bytea.
std::string PostgresDialect(std::string_view sqlite_sql);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_STORE_SQL_H_
