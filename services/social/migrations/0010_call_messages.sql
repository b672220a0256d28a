-- Call system messages (call_started, call_missed, call_ended): content stays empty, as on every
-- system message, and the message points at its call; call_ended also keeps how long the call
-- lasted, from its start to its end, in whole seconds. Messages people write have neither.
ALTER TABLE direct_messages
  ADD COLUMN call_id uuid,
  ADD COLUMN call_duration_seconds integer CHECK (call_duration_seconds >= 0),
  ADD CONSTRAINT direct_messages_call_fields CHECK (
    (call_id IS NOT NULL) = (type IN ('call_started', 'call_missed', 'call_ended'))
    AND (call_duration_seconds IS NOT NULL) = (type = 'call_ended')
  );
