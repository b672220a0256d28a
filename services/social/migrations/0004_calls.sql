-- Calls in direct conversations. One live call per conversation (the partial unique index answers
-- a second ring with a conflict, also when two rings race); ringing that nobody answers by
-- `ring_expires_at` is ended as missed by whichever replica's clock locks it first.
CREATE TABLE calls (
  id uuid PRIMARY KEY,
  conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  initiator_id uuid NOT NULL,
  state text NOT NULL CHECK (state IN ('ringing', 'active', 'ended')),
  created_at timestamptz NOT NULL,
  answered_at timestamptz,
  ended_at timestamptz,
  end_reason text CHECK (end_reason IN ('missed', 'declined', 'completed')),
  ring_expires_at timestamptz NOT NULL,
  CHECK ((state = 'ended') = (ended_at IS NOT NULL))
);
CREATE UNIQUE INDEX calls_one_live ON calls (conversation_id) WHERE state <> 'ended';
CREATE INDEX calls_ringing_due ON calls (ring_expires_at) WHERE state = 'ringing';

CREATE TABLE call_participants (
  call_id uuid NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  state text NOT NULL CHECK (state IN ('ringing', 'joined', 'declined', 'left')),
  PRIMARY KEY (call_id, user_id)
);
