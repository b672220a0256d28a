-- How far each durable consumer is known to have read its stream (consumer-progress.ts): a filtered
-- consumer's own position stays on the last event of its filter, so without this mark the events
-- of other subjects that the retention drops later would look like events it never read. The
-- creation times of the stream and of the durable tell one made again (a stream's sequences start
-- over; a durable starts afresh) from the one marked.
CREATE TABLE event_consumer_marks (
  stream text NOT NULL,
  durable text NOT NULL,
  stream_created text NOT NULL,
  durable_created text NOT NULL,
  read_up_to bigint NOT NULL,
  marked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream, durable)
);
