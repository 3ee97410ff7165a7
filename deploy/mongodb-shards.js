// The shard keys of fptrack's database 'fptrack' (matcher.store.layout.SHARD_KEYS).
// Run once with mongosh on a mongos: before the first fptrack process starts, or on
// a database in use after fptrack migrate (deploy/SCALING.md).
sh.enableSharding("fptrack");
sh.shardCollection("fptrack.works", {"key": 1});
sh.shardCollection("fptrack.pages", {"_id": 1});
sh.shardCollection("fptrack.work_segments", {"work_id": 1});
sh.shardCollection("fptrack.fingerprints", {"owner_id": 1});
sh.shardCollection("fptrack.matches", {"page_id": 1});
sh.shardCollection("fptrack.sites", {"name": 1});
sh.shardCollection("fptrack.users", {"username": 1});
sh.shardCollection("fptrack.crawls", {"run_id": 1});
sh.shardCollection("fptrack.failures", {"task": 1, "ref": 1});
db.getSiblingDB("fptrack").getCollection("state").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.state", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("api_tokens").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.api_tokens", {"_id": "hashed"});
sh.shardCollection("fptrack.reports", {"day": 1});
db.getSiblingDB("fptrack").getCollection("site_rules").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.site_rules", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("tallies").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.tallies", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("tallies_works").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.tallies_works", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("counters").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.counters", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("stamps").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.stamps", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("stamp_batches").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.stamp_batches", {"_id": "hashed"});
db.getSiblingDB("fptrack").getCollection("alert_rules").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.alert_rules", {"_id": "hashed"});
sh.shardCollection("fptrack.alert_outbox", {"key": 1});
db.getSiblingDB("fptrack").getCollection("alert_log").createIndex({"_id": "hashed"});
sh.shardCollection("fptrack.alert_log", {"_id": "hashed"});
sh.shardCollection("fptrack.archive.files", {"_id": 1});
sh.shardCollection("fptrack.archive.chunks", {"files_id": 1, "n": 1});
