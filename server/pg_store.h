// The PostgreSQL tuning store (issue 22): several daemons, one database.
//
// `conninfo` is anything libpq accepts: a URI (postgresql://user@host/db,
// postgres://...) or keyword string ("host=/run/pg dbname=blocktune").
// Passwords belong in libpq's usual places (PGPASSWORD, ~/.pgpass,
// pg_service.conf), not in --db; TLS options (sslmode, sslrootcert, ...)
// are passed to libpq as written.
#ifndef BLOCKTUNE_SERVER_PG_STORE_H_
#define BLOCKTUNE_SERVER_PG_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "kernels/status.h"
#include "server/tuning_store.h"

namespace blocktune {

// Whether --db names a PostgreSQL database rather than a SQLite file: a
// postgresql:// or postgres:// URI, or a libpq keyword string
// ("host=/run/postgresql dbname=blocktune"): text with an "=" that names
// no existing file (an existing file is always SQLite).
bool IsPostgresUri(std::string_view db);

// Where `conninfo` points, for logs and Describe(): user, host, port,
// database, service and sslmode; never a password. INVALID_ARGUMENT naming
// --db when libpq cannot parse it.
StatusOr<std::string> DescribePostgres(const std::string& conninfo);

// Connects, migrates to the current schema (under an advisory lock, so
// daemons starting together migrate once) and returns the store. UNAVAILABLE
// when the server cannot be reached, FAILED_PRECONDITION when it refuses the
// login or its schema is newer than this build knows.
StatusOr<std::unique_ptr<TuningStore>> OpenPostgresStore(
    const std::string& conninfo);

}  // namespace blocktune

// ---------------------------------------------------------------------------
// Several daemons, one database (issue 22).
//
// Campaigns: work_items rows (schema v6), planned and committed under the
// campaign row's lock (SELECT ... FOR UPDATE), claimed with
//   UPDATE work_items SET state = 'leased', holder = $me, lease_until_ms =
//     now + lease WHERE first_seq = (SELECT ... WHERE state = 'queued' OR
//     (state = 'leased' AND lease_until_ms < now) ORDER BY first_seq
//     LIMIT 1 FOR UPDATE SKIP LOCKED)
// so claimers never wait on each other or get the same item. "now" is the
// server's clock (clock_timestamp()), never a daemon's, so a skewed box
// cannot steal or keep leases. A commit locks the items it names and checks
// that they are still the holder's; the unique (campaign, seq) index is
// the backstop. The protocol is server/campaigns.h's.
//
// Caches: store_generation (one row) counts commits of tuned answers and of
// models, bumped in their transaction. A counter survives what a dropped
// LISTEN connection loses, and is one indexed read: FindTuned's cache
// reads it at most every 250 ms, the daemon's model registry every second.

#endif  // BLOCKTUNE_SERVER_PG_STORE_H_
