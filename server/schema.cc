#include "server/schema.h"

namespace blocktune {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "devices, campaigns, samples, models, tuned", R"sql(
CREATE TABLE devices (
  id               INTEGER PRIMARY KEY,
  name             TEXT    NOT NULL,
  cc_major         INTEGER NOT NULL,
  cc_minor         INTEGER NOT NULL,
  sm_count         INTEGER NOT NULL,
  memory_bytes     INTEGER NOT NULL,
  sm_clock_mhz     INTEGER NOT NULL,
  memory_clock_mhz INTEGER NOT NULL,
  driver_version   TEXT    NOT NULL,
  cuda_version     TEXT    NOT NULL,
  ptxas_version    TEXT    NOT NULL,
  UNIQUE (name, cc_major, cc_minor, sm_count, memory_bytes, sm_clock_mhz,
          memory_clock_mhz, driver_version, cuda_version, ptxas_version)
);

CREATE TABLE campaigns (
  id             INTEGER PRIMARY KEY,
  op             TEXT    NOT NULL,
  dtype          TEXT    NOT NULL,
  gpu            INTEGER NOT NULL,
  minutes        INTEGER NOT NULL,
  max_samples    INTEGER NOT NULL,
  seed           INTEGER NOT NULL,
  label          TEXT    NOT NULL,
  state          TEXT    NOT NULL,
  device_id      INTEGER REFERENCES devices (id),
  samples_ok     INTEGER NOT NULL DEFAULT 0,
  samples_failed INTEGER NOT NULL DEFAULT 0,
  rng_state      BLOB    NOT NULL DEFAULT x'',
  message        TEXT    NOT NULL DEFAULT '',
  created_unix   INTEGER NOT NULL,
  updated_unix   INTEGER NOT NULL
);

-- context is the canonical text of x_C (kernels/context.h ToString);
-- ml..kg are x_B.
CREATE TABLE samples (
  id            INTEGER PRIMARY KEY,
  device_id     INTEGER NOT NULL REFERENCES devices (id),
  campaign_id   INTEGER NOT NULL DEFAULT 0,
  op            TEXT    NOT NULL,
  context       TEXT    NOT NULL,
  ml INTEGER NOT NULL, nl INTEGER NOT NULL, ms INTEGER NOT NULL,
  ns INTEGER NOT NULL, u  INTEGER NOT NULL, kg INTEGER NOT NULL,
  status        TEXT    NOT NULL,
  median_s      REAL    NOT NULL,
  spread        REAL    NOT NULL,
  repetitions   INTEGER NOT NULL,
  sm_clock_mhz  REAL    NOT NULL,
  measured_unix INTEGER NOT NULL,
  error         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX samples_by_device_op ON samples (device_id, op);
CREATE INDEX samples_by_campaign ON samples (campaign_id);

CREATE TABLE models (
  id               INTEGER PRIMARY KEY,
  device_id        INTEGER NOT NULL REFERENCES devices (id),
  op               TEXT    NOT NULL,
  architecture     TEXT    NOT NULL,
  weights          BLOB    NOT NULL,
  normalization    BLOB    NOT NULL,
  training_samples INTEGER NOT NULL,
  metrics_json     TEXT    NOT NULL,
  created_unix     INTEGER NOT NULL
);

CREATE TABLE tuned (
  id           INTEGER PRIMARY KEY,
  device_id    INTEGER NOT NULL REFERENCES devices (id),
  op           TEXT    NOT NULL,
  context      TEXT    NOT NULL,
  ml INTEGER NOT NULL, nl INTEGER NOT NULL, ms INTEGER NOT NULL,
  ns INTEGER NOT NULL, u  INTEGER NOT NULL, kg INTEGER NOT NULL,
  predicted_s  REAL    NOT NULL,
  measured_s   REAL    NOT NULL,
  source       TEXT    NOT NULL,
  model_id     INTEGER NOT NULL DEFAULT 0,
  updated_unix INTEGER NOT NULL,
  UNIQUE (device_id, context, ml, nl, ms, ns, u, kg)
);
CREATE INDEX tuned_by_context ON tuned (context);
)sql"},
      {2, "campaigns choose GPUs and sampler; samples keep their campaign seq",
       R"sql(
ALTER TABLE campaigns DROP COLUMN gpu;
ALTER TABLE campaigns ADD COLUMN gpus TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN sampler TEXT NOT NULL DEFAULT 'bayes';
-- seq numbers a campaign's candidates; -1 for samples from elsewhere. A
-- resumed campaign can never store the same candidate twice.
ALTER TABLE samples ADD COLUMN seq INTEGER NOT NULL DEFAULT -1;
CREATE UNIQUE INDEX samples_campaign_seq ON samples (campaign_id, seq)
  WHERE seq >= 0;
)sql"},
      {3, "models record how they were trained and with which libtorch", R"sql(
ALTER TABLE models ADD COLUMN training_set TEXT NOT NULL DEFAULT '';
ALTER TABLE models ADD COLUMN libtorch_version TEXT NOT NULL DEFAULT '';
CREATE INDEX tuned_by_device_op ON tuned (device_id, op);
)sql"},
  };
  return kMigrations;
}

int CurrentSchemaVersion() { return Migrations().back().version; }

}  // namespace blocktune
