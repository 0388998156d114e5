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
// Design notes, not built yet (issue 22, parts 2 and 3): one campaign over
// every daemon on the database.
//
// Work items. Starting a campaign also writes its plan as rows of a new
// table (a migration, on SQLite too, where one daemon claims everything):
//   work_items (campaign_id, first_seq, last_seq, state queued|leased|done,
//               daemon TEXT, gpu INTEGER, lease_until BIGINT,
//               attempts INTEGER, PRIMARY KEY (campaign_id, first_seq))
// A range of seq numbers, say 64 candidates (a few seconds of GPU time), is
// small enough that a lost lease costs little and large enough that claims
// stay rare next to sample commits. The Naive Bayes sampler's state is per
// campaign: the candidates of a range are drawn from the rng_state stored
// with the item when it was planned, so any daemon reproduces them.
//
// Claiming. A daemon with an idle GPU runs, in one transaction:
//   SELECT ... FROM work_items WHERE state = 'queued'
//      OR (state = 'leased' AND lease_until < now)
//   ORDER BY campaign_id, first_seq LIMIT 1 FOR UPDATE SKIP LOCKED;
//   UPDATE work_items SET state = 'leased', daemon = $me, gpu = $g,
//      lease_until = now + 60, attempts = attempts + 1 WHERE ...;
// SKIP LOCKED makes concurrent claimers take different rows without
// waiting. A daemon renews its leases every 20 s while it measures; each
// sample batch commits with a check that the lease is still its own
// (UPDATE ... WHERE daemon = $me AND lease_until >= now, 0 rows: abandon
// the item, its samples roll back with the batch).
//
// Nothing lost, nothing twice. The existing unique index on samples
// (campaign_id, seq) is the backstop: a daemon that was presumed dead and
// comes back cannot store a seq another daemon stored after reclaiming
// the item (its batch fails on the index and it drops the item). Campaign
// counters become sums over samples (a view) rather than a field one
// daemon overwrites; the campaign is done when every item is done.
// `campaign watch` reads those sums grouped by work_items.daemon for each
// box's share. Time is the database's (now() in SQL), never a daemon's
// clock, so a skewed box cannot steal or keep leases.
//
// Caches across daemons. A generation counter row (store_generation,
// bumped in the same transaction as any tuned or model write) is cheaper
// and more robust than LISTEN/NOTIFY (which a dropped connection loses): a
// daemon keeps its FindTuned cache and checks the counter at most every
// 250 ms, with NOTIFY as an optional fast path to wake it sooner.

#endif  // BLOCKTUNE_SERVER_PG_STORE_H_
