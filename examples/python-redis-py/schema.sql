-- One account and its ledger (SQLite); a correct run keeps balance = SUM(ledger.amount).
CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL);
CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL REFERENCES accounts (id), amount INTEGER NOT NULL);
INSERT INTO accounts (id, balance) VALUES ('acc-1', 0);
