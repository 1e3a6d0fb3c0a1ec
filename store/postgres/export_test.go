package postgres

// LockKey is the SQL expression naming the migration lock.
const LockKey = lockKey

// Migrations is the embedded schema.
var Migrations = migrations
