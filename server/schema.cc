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
      {4,
       "kernel families: samples, models and tuned answers name their "
       "family, generator version and precision; parameters by name",
       R"sql(
-- Parameters are stored by name, in the family's Format() form
-- ("ML=64 NL=64 MS=4 NS=4 U=8 KG=1", "bm=128 bn=128 ..."), so a new family
-- needs no new columns. family and generator_version say which generator
-- emitted the kernel (kernels/family.h); dtype is the context's precision,
-- kept apart for filtering.
--
-- Rows of v3 were all measured with the ffma generators. Those measured
-- before the K_G reduction change (2d62d6b, 2026-11-22 03:12:23 UTC,
-- unix 1795317143) are generator version 0, later ones version 1.
--
-- samples and tuned are rebuilt to drop ml..kg (tuned's UNIQUE names them,
-- and a rebuild is the portable way to drop columns).
CREATE TABLE samples_v4 (
  id                INTEGER PRIMARY KEY,
  device_id         INTEGER NOT NULL REFERENCES devices (id),
  campaign_id       INTEGER NOT NULL DEFAULT 0,
  op                TEXT    NOT NULL,
  context           TEXT    NOT NULL,
  dtype             TEXT    NOT NULL,
  family            TEXT    NOT NULL,
  generator_version INTEGER NOT NULL,
  params            TEXT    NOT NULL,
  status            TEXT    NOT NULL,
  median_s          REAL    NOT NULL,
  spread            REAL    NOT NULL,
  repetitions       INTEGER NOT NULL,
  sm_clock_mhz      REAL    NOT NULL,
  measured_unix     INTEGER NOT NULL,
  error             TEXT    NOT NULL DEFAULT '',
  seq               INTEGER NOT NULL DEFAULT -1
);
INSERT INTO samples_v4 (id, device_id, campaign_id, op, context, dtype,
                        family, generator_version, params, status, median_s,
                        spread, repetitions, sm_clock_mhz, measured_unix,
                        error, seq)
SELECT id, device_id, campaign_id, op, context,
       CASE WHEN context LIKE '% dtype=tf32' THEN 'tf32'
            WHEN context LIKE '% dtype=bf16' THEN 'bf16'
            WHEN context LIKE '% dtype=fp16' THEN 'fp16'
            WHEN context LIKE '% dtype=fp64' THEN 'fp64'
            ELSE 'fp32' END,
       op || '.ffma',
       CASE WHEN measured_unix < 1795317143 THEN 0 ELSE 1 END,
       'ML=' || ml || ' NL=' || nl || ' MS=' || ms || ' NS=' || ns ||
           ' U=' || u || ' KG=' || kg,
       status, median_s, spread, repetitions, sm_clock_mhz, measured_unix,
       error, seq
FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v4 RENAME TO samples;
CREATE INDEX samples_by_device_op ON samples (device_id, op);
CREATE INDEX samples_by_campaign ON samples (campaign_id);
CREATE UNIQUE INDEX samples_campaign_seq ON samples (campaign_id, seq)
  WHERE seq >= 0;
CREATE INDEX samples_by_family ON samples (family, generator_version);

-- A model's generator_version is the family's version when it was trained;
-- data_version the oldest generator version of the data it learned from.
-- A v3 model learned from every ok sample of its device name and op it
-- could see, so one that could see a version-0 sample has data version 0.
ALTER TABLE models ADD COLUMN dtype TEXT NOT NULL DEFAULT 'fp32';
ALTER TABLE models ADD COLUMN family TEXT NOT NULL DEFAULT '';
ALTER TABLE models ADD COLUMN generator_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE models ADD COLUMN data_version INTEGER NOT NULL DEFAULT 0;
UPDATE models SET
  family = op || '.ffma',
  generator_version = CASE WHEN created_unix < 1795317143 THEN 0 ELSE 1 END,
  data_version = CASE
    WHEN created_unix < 1795317143 THEN 0
    WHEN EXISTS (SELECT 1 FROM samples s
                 JOIN devices ds ON ds.id = s.device_id
                 JOIN devices dm ON dm.id = models.device_id
                 WHERE ds.name = dm.name AND s.op = models.op
                   AND s.status = 'ok' AND s.generator_version = 0
                   AND s.measured_unix <= models.created_unix) THEN 0
    ELSE 1 END;

-- A tuned answer is version 0 if it was stored before the change, or
-- predicted by a model whose data is version 0.
CREATE TABLE tuned_v4 (
  id                INTEGER PRIMARY KEY,
  device_id         INTEGER NOT NULL REFERENCES devices (id),
  op                TEXT    NOT NULL,
  context           TEXT    NOT NULL,
  dtype             TEXT    NOT NULL,
  family            TEXT    NOT NULL,
  generator_version INTEGER NOT NULL,
  params            TEXT    NOT NULL,
  predicted_s       REAL    NOT NULL,
  measured_s        REAL    NOT NULL,
  source            TEXT    NOT NULL,
  model_id          INTEGER NOT NULL DEFAULT 0,
  updated_unix      INTEGER NOT NULL,
  UNIQUE (device_id, context, family, params)
);
INSERT INTO tuned_v4 (id, device_id, op, context, dtype, family,
                      generator_version, params, predicted_s, measured_s,
                      source, model_id, updated_unix)
SELECT id, device_id, op, context,
       CASE WHEN context LIKE '% dtype=tf32' THEN 'tf32'
            WHEN context LIKE '% dtype=bf16' THEN 'bf16'
            WHEN context LIKE '% dtype=fp16' THEN 'fp16'
            WHEN context LIKE '% dtype=fp64' THEN 'fp64'
            ELSE 'fp32' END,
       op || '.ffma',
       CASE WHEN updated_unix < 1795317143 THEN 0
            WHEN model_id > 0 AND EXISTS (
              SELECT 1 FROM models m
              WHERE m.id = tuned.model_id AND m.data_version = 0) THEN 0
            ELSE 1 END,
       'ML=' || ml || ' NL=' || nl || ' MS=' || ms || ' NS=' || ns ||
           ' U=' || u || ' KG=' || kg,
       predicted_s, measured_s, source, model_id, updated_unix
FROM tuned;
DROP TABLE tuned;
ALTER TABLE tuned_v4 RENAME TO tuned;
CREATE INDEX tuned_by_context ON tuned (context);
CREATE INDEX tuned_by_device_op ON tuned (device_id, op);
)sql"},
      {5, "campaigns name the families they sample and may retune stale rows",
       R"sql(
-- families: comma-separated registered names, '' = every family that
-- implements (op, dtype) on the campaign's GPU. retune_stale: 0 or 1.
ALTER TABLE campaigns ADD COLUMN families TEXT NOT NULL DEFAULT '';
ALTER TABLE campaigns ADD COLUMN retune_stale INTEGER NOT NULL DEFAULT 0;
)sql"},
      {6,
       "campaigns are planned as work items that any daemon on the store "
       "claims; generation counters for caches across daemons",
       R"sql(
-- A campaign's candidates first_seq .. first_seq + count - 1, as the
-- planner drew them (candidates: serialized, opaque to SQL). state is
-- queued, leased or done; a leased item is holder's until lease_until_ms
-- (the store's clock, milliseconds since the epoch).
CREATE TABLE work_items (
  campaign_id    INTEGER NOT NULL REFERENCES campaigns (id),
  first_seq      INTEGER NOT NULL,
  count          INTEGER NOT NULL,
  candidates     BLOB    NOT NULL,
  state          TEXT    NOT NULL DEFAULT 'queued',
  holder         TEXT    NOT NULL DEFAULT '',
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  attempts       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, first_seq)
);
CREATE INDEX work_items_open ON work_items (campaign_id, state);

-- One row; tuned and models grow with every commit that writes them.
CREATE TABLE store_generation (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  tuned  INTEGER NOT NULL,
  models INTEGER NOT NULL
);
INSERT INTO store_generation (id, tuned, models) VALUES (1, 0, 0);
)sql"},
      {7, "samples keep the digest of the kernel they measured", R"sql(
-- kernels/family.h KernelDigest: 16 lowercase hex digits of the PTX and
-- the launch; '' where unknown (rows stored before this version). A
-- generator version bump re-labels the stale samples whose digest the new
-- generator reproduces (server/sample_digest.h).
ALTER TABLE samples ADD COLUMN kernel_digest TEXT NOT NULL DEFAULT '';
)sql"},
      {8, "campaigns bound the work of the contexts they draw", R"sql(
-- tuner/campaign_spec.h CampaignSpec::min_flops, max_flops: 2*M*N*K of a
-- drawn context at least min_flops and at most max_flops (0: the default,
-- 2^36). Every campaign before this version drew with those defaults.
ALTER TABLE campaigns ADD COLUMN min_flops REAL NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN max_flops REAL NOT NULL DEFAULT 0;
)sql"},
  };
  return kMigrations;
}

int CurrentSchemaVersion() { return Migrations().back().version; }

}  // namespace blocktune
