// The daemon's side of Import: the chunks of one streamed import, checked
// as they arrive and gathered into one WriteBatch, so that the import is
// stored in one transaction or not at all (blocktune.proto, ImportRequest).
#ifndef BLOCKTUNE_SERVER_DATASET_IMPORT_H_
#define BLOCKTUNE_SERVER_DATASET_IMPORT_H_

#include <cstdint>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/status.h"
#include "server/tuning_store.h"

namespace blocktune {

class DatasetImport {
 public:
  // `max_bytes`: the most the chunks of this import may total; the records
  // are held in memory until the commit, so this bounds the daemon's memory.
  explicit DatasetImport(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // Checks one chunk and adds its records. INVALID_ARGUMENT naming the
  // field (indices count across chunks), RESOURCE_EXHAUSTED naming the
  // limit once the chunks pass it, FAILED_PRECONDITION for a chunk after
  // the one marked commit. After an error the import is spoiled: store
  // nothing of it.
  Status Add(const v1::ImportRequest& chunk);

  // Whether the chunk marked commit has arrived: only then may the batch be
  // stored. A stream that ends before it was interrupted.
  bool complete() const { return committed_; }
  int64_t bytes() const { return bytes_; }
  int64_t chunks() const { return chunks_; }

  // The records of every chunk. Campaign and model ids of another store mean
  // nothing here and are cleared; tuned answers become SOURCE_IMPORTED.
  WriteBatch& batch() { return batch_; }

 private:
  const int64_t max_bytes_;
  int64_t bytes_ = 0;
  int64_t chunks_ = 0;
  bool committed_ = false;
  WriteBatch batch_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_DATASET_IMPORT_H_
