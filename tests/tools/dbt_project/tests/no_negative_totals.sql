select * from {{ ref('customer_totals') }} where total < 0
