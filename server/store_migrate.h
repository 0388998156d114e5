// Copying one store into another (issue 22, "Moving"): a SQLite file into a
// new PostgreSQL database, with its provenance. `blocktuned migrate --from
// FILE.db --to postgresql://...` runs it (the daemon's binary, since the CLI
// `blocktune` only talks to a daemon and links no store).
#ifndef BLOCKTUNE_SERVER_STORE_MIGRATE_H_
#define BLOCKTUNE_SERVER_STORE_MIGRATE_H_

#include <cstdint>
#include <string>

#include "kernels/status.h"
#include "server/tuning_store.h"

namespace blocktune {

struct MigrateCounts {
  int64_t campaigns = 0;
  int64_t samples = 0;
  int64_t models = 0;
  int64_t tuned = 0;
};

// Copies every campaign, sample, model and tuned answer of `from` into
// `to`, which must hold none (FAILED_PRECONDITION otherwise, so a repeated
// run never doubles anything). Kept as they were: device fingerprints,
// families, generator versions, precisions, parameters, measurements and
// their times, a campaign's seq numbers, state, counters and sampler state,
// a model's weights and training provenance, a tuned answer's source. Ids
// are the target's own; samples and tuned answers point at the copies of
// their campaign and model. A campaign's created/updated times become the
// time of the copy (the interface has no way to set them).
//
// Models are written first, then everything else in one batch: a failure
// there leaves at most the models behind, and the target not empty.
StatusOr<MigrateCounts> MigrateStore(TuningStore& from, TuningStore& to);

// Opens --from (a SQLite file that must exist) and --to (a PostgreSQL
// connection string or a SQLite path), migrates, and returns a line for
// people. Errors name the flag.
StatusOr<std::string> MigrateDatabases(const std::string& from,
                                       const std::string& to);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_STORE_MIGRATE_H_
