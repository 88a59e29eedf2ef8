SELECT count(*), sum(a.v) FROM pq_left a JOIN pq_right b ON a.k = b.k;
