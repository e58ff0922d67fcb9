"""Where a receiver's inputs come from: profiles, alignment artifacts and capability
registrations read from files and shipped data (``loader``), and remote resources fetched
under a retrieval policy (``retrieval``)."""
