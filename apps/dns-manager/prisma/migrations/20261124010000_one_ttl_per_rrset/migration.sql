-- One TTL per RRset (RFC 2181 §5.2): the upstream served an RRset with the lowest TTL of its
-- records; from now on every record of an RRset holds that TTL, so reads show what is served.
UPDATE "dns_record" AS r
   SET "ttl" = m."ttl"
  FROM (SELECT "subdomain_id", "name", "type", min("ttl") AS "ttl"
          FROM "dns_record" GROUP BY "subdomain_id", "name", "type") AS m
 WHERE r."subdomain_id" = m."subdomain_id" AND r."name" = m."name" AND r."type" = m."type"
   AND r."ttl" <> m."ttl";
