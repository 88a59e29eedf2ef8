\set id random(1, 200000)
SELECT v FROM pq_numbers WHERE id = :id;
