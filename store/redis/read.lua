-- read(member): the record (a tombstone reads as absent on the Rust side),
-- or nil.
return record(ARGV[1])
