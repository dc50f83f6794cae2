-- Jobs to send, and the sends (MariaDB), with a unique idempotency key.
CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, done BOOLEAN NOT NULL);
CREATE TABLE sends (
  id         BIGINT AUTO_INCREMENT PRIMARY KEY,
  request_id VARCHAR(64) NOT NULL,
  UNIQUE KEY request_once (request_id)  -- the idempotency key: a retry's INSERT IGNORE does nothing
);
INSERT INTO jobs VALUES ('job-01', 0),('job-02', 0),('job-03', 0),('job-04', 0),('job-05', 0),('job-06', 0),('job-07', 0),('job-08', 0),('job-09', 0),('job-10', 0),('job-11', 0),('job-12', 0),('job-13', 0),('job-14', 0),('job-15', 0),('job-16', 0),('job-17', 0),('job-18', 0),('job-19', 0),('job-20', 0),('job-21', 0),('job-22', 0),('job-23', 0),('job-24', 0),('job-25', 0),('job-26', 0),('job-27', 0),('job-28', 0),('job-29', 0),('job-30', 0),('job-31', 0),('job-32', 0),('job-33', 0),('job-34', 0),('job-35', 0),('job-36', 0),('job-37', 0),('job-38', 0),('job-39', 0),('job-40', 0);
