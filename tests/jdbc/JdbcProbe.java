import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/**
 * Exercises pgJDBC the way JDBC tools do (DDL, a PreparedStatement, DatabaseMetaData) and prints
 * what it sees, one fact per line, so a test can compare tidegate's answers with PostgreSQL's.
 * Usage: java JdbcProbe jdbc:postgresql://host:port/db user
 */
public final class JdbcProbe {
    /** Type names whose getTypeInfo rows must exist in both servers. */
    private static final Set<String> COMMON_TYPES = new HashSet<>(Arrays.asList(
            "bool", "int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar", "bpchar",
            "bytea", "date", "time", "timestamp", "timestamptz", "interval", "json", "jsonb", "uuid"));

    private JdbcProbe() {
    }

    public static void main(String[] args) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("connectTimeout", "10");
        try (Connection conn = DriverManager.getConnection(args[0], props)) {
            setUp(conn);
            query(conn);
            metadata(conn);
            errors(conn);
        }
    }

    private static void setUp(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute("DROP VIEW IF EXISTS jdbc_items_v");
            st.execute("DROP TABLE IF EXISTS jdbc_items");
            st.execute("CREATE TABLE jdbc_items (id integer PRIMARY KEY, name varchar(30) NOT NULL, price numeric(8,2),"
                    + " qty bigint, ok boolean, added date, at timestamp, note text)");
            int n = st.executeUpdate("INSERT INTO jdbc_items VALUES (1, 'bolt', 0.25, 100, true, '2024-01-05',"
                    + " '2024-01-05 08:00:00', NULL), (2, 'nut', 0.10, 250, false, '2024-02-01',"
                    + " '2024-02-01 17:30:00', 'steel'), (3, 'gear', 12.00, 7, NULL, NULL, NULL, 'brass')");
            System.out.println("insert count=" + n);
            st.execute("CREATE VIEW jdbc_items_v AS SELECT id, name FROM jdbc_items");
        }
    }

    private static void query(Connection conn) throws SQLException {
        String sql = "SELECT id, name, price, qty, ok, added, at, note FROM jdbc_items WHERE qty >= ? ORDER BY id";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            // Run enough times to cross pgJDBC's prepareThreshold (server-side named statements).
            for (int round = 0; round < 6; round++) {
                ps.setLong(1, round == 5 ? 0L : 50L);
                try (ResultSet rs = ps.executeQuery()) {
                    if (round == 0 || round == 5) {
                        ResultSetMetaData md = rs.getMetaData();
                        StringBuilder head = new StringBuilder("columns");
                        for (int i = 1; i <= md.getColumnCount(); i++) {
                            head.append(' ').append(md.getColumnLabel(i)).append(':').append(md.getColumnTypeName(i))
                                .append(':').append(md.getColumnType(i));
                        }
                        System.out.println(head);
                    }
                    while (rs.next()) {
                        System.out.println("row" + round + " " + rs.getInt(1) + "|" + rs.getString(2) + "|"
                                + rs.getBigDecimal(3) + "|" + rs.getLong(4) + "|" + rs.getObject(5) + "|"
                                + rs.getDate(6) + "|" + rs.getTimestamp(7) + "|" + rs.getString(8));
                    }
                }
            }
        }
        try (PreparedStatement ps = conn.prepareStatement("UPDATE jdbc_items SET qty = qty + ? WHERE id = ?")) {
            ps.setLong(1, 5);
            ps.setInt(2, 3);
            System.out.println("update count=" + ps.executeUpdate());
        }
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            st.executeUpdate("INSERT INTO jdbc_items (id, name) VALUES (10, 'tmp')");
            conn.rollback();
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM jdbc_items")) {
                rs.next();
                System.out.println("count after rollback=" + rs.getLong(1));
            }
            conn.commit();
        }
        conn.setAutoCommit(true);
    }

    private static void metadata(Connection conn) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        try (ResultSet rs = md.getSchemas()) {
            while (rs.next()) {
                String schema = rs.getString("TABLE_SCHEM");
                if (schema.equals("public") || schema.equals("pg_catalog") || schema.equals("information_schema")) {
                    System.out.println("schema " + schema);
                }
            }
        }
        try (ResultSet rs = md.getTables(null, "public", "jdbc_%", new String[] {"TABLE", "VIEW"})) {
            while (rs.next()) {
                System.out.println("table " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME") + " "
                        + rs.getString("TABLE_TYPE"));
            }
        }
        try (ResultSet rs = md.getColumns(null, "public", "jdbc_items", "%")) {
            while (rs.next()) {
                System.out.println("column " + rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + " "
                        + rs.getInt("ORDINAL_POSITION") + " " + rs.getString("TYPE_NAME") + " "
                        + rs.getInt("DATA_TYPE") + " nullable=" + rs.getInt("NULLABLE") + " "
                        + rs.getString("IS_NULLABLE"));
            }
        }
        try (ResultSet rs = md.getPrimaryKeys(null, "public", "jdbc_items")) {
            while (rs.next()) {
                System.out.println("pk " + rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + " seq="
                        + rs.getInt("KEY_SEQ") + " name=" + rs.getString("PK_NAME"));
            }
        }
        Set<String> seen = new HashSet<>();
        try (ResultSet rs = md.getTypeInfo()) {
            while (rs.next()) {
                String name = rs.getString("TYPE_NAME");
                if (COMMON_TYPES.contains(name) && seen.add(name)) {
                    System.out.println("type " + name + " " + rs.getInt("DATA_TYPE"));
                }
            }
        }
        System.out.println("product " + md.getDatabaseProductName());
        System.out.println("identifier quote " + md.getIdentifierQuoteString());
    }

    private static void errors(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.executeQuery("SELECT * FROM jdbc_nope");
            System.out.println("error missing");
        } catch (SQLException e) {
            System.out.println("error " + e.getSQLState());
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 1 AS one")) {
            rs.next();
            System.out.println("after error " + rs.getInt("one"));
        }
    }
}
