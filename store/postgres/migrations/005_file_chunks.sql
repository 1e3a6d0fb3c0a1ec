-- File contents, kept in the database so that every host sharing it reads
-- them (store.Blobs). A put writes its chunks under a new generation and
-- points the file's row at it in one transaction, deleting the old
-- generation's chunks: a reader that follows the generation it opened
-- reads one version or fails. SQLite's hosts keep contents on their own
-- disk: store/sqlite has neither this table nor the column.
ALTER TABLE files ADD COLUMN generation BIGINT;
CREATE TABLE file_chunks (
	namespace TEXT NOT NULL,
	name TEXT COLLATE "C" NOT NULL,
	generation BIGINT NOT NULL,
	idx INTEGER NOT NULL,
	data BYTEA NOT NULL,
	PRIMARY KEY (namespace, name, generation, idx),
	-- Deleting a file's metadata deletes its contents. Deferred: a put
	-- writes a new file's chunks before its row.
	FOREIGN KEY (namespace, name) REFERENCES files (namespace, name) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
