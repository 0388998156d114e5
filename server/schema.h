// The SQLite schema of the tuning store and its migrations.
//
// The schema version is PRAGMA user_version. Migrations are applied in
// order, each in its own transaction; a shipped migration is never edited,
// a change is a new migration appended to the list.
#ifndef BLOCKTUNE_SERVER_SCHEMA_H_
#define BLOCKTUNE_SERVER_SCHEMA_H_

#include <string_view>
#include <vector>

namespace blocktune {

struct Migration {
  int version;               // user_version after it is applied
  std::string_view summary;  // for the log
  std::string_view sql;
};

// All migrations, oldest first; the last one's version is current.
const std::vector<Migration>& Migrations();
int CurrentSchemaVersion();

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SCHEMA_H_
