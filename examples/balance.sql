-- One account and its ledger (PostgreSQL), for redsync-balance, shell-psql and node-redlock; a correct run keeps balance = SUM(ledger.amount).
CREATE TABLE accounts (
  id      TEXT PRIMARY KEY,
  balance BIGINT NOT NULL,
  fence   BIGINT NOT NULL DEFAULT 0 -- the highest fence that claimed it
);
CREATE TABLE ledger (
  id      BIGSERIAL PRIMARY KEY,    -- commit order: the account's row lock orders the inserts
  account TEXT NOT NULL REFERENCES accounts (id),
  amount  BIGINT NOT NULL,
  fence   BIGINT                    -- NULL when the writer had none
);
INSERT INTO accounts (id, balance) VALUES ('acc-1', 0);
