SELECT count(*), sum(v) FROM pq_numbers WHERE v % 7 <> 3;
