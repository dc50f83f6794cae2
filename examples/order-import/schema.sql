-- The order being imported and one log row per imported batch (PostgreSQL);
-- a correct run keeps orders.batches = the number of its log rows.
CREATE TABLE orders (
  id      TEXT PRIMARY KEY,
  batches BIGINT NOT NULL DEFAULT 0,
  fence   BIGINT NOT NULL DEFAULT 0 -- the highest LOCKCTL_FENCE that claimed it
);
CREATE TABLE import_log (
  id       BIGSERIAL PRIMARY KEY,
  order_id TEXT NOT NULL REFERENCES orders (id),
  batch    BIGINT NOT NULL,
  fence    BIGINT NOT NULL
);
INSERT INTO orders (id) VALUES ('order-demo-001');
